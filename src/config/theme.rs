//! Theme files (configuration): the bundled ones under `assets/themes/` and user files. A
//! theme file maps role names (`title`, `working`, `error`, …) to a style spec such as
//! `"cyan bold"`, `"black on yellow bold"` or `"#5f87af underlined"`; roles it leaves out
//! keep the default theme's style. Parses into plain data (`ThemeSpec`) that the views turn
//! into terminal styles. Must not hold state or read files (callers pass text).

use std::collections::BTreeMap;

/// A colour as a theme file names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    Reset,
    Black,
    Red,
    Green,
    Yellow,
    Blue,
    Magenta,
    Cyan,
    Gray,
    DarkGray,
    LightRed,
    LightGreen,
    LightYellow,
    LightBlue,
    LightMagenta,
    LightCyan,
    White,
    Rgb(u8, u8, u8),
}

/// A text emphasis a theme file can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emphasis {
    Bold,
    Dim,
    Italic,
    Underlined,
    Reversed,
    Crossed,
}

/// One role's style: `[FG] [on BG] [EMPHASIS…]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StyleSpec {
    pub fg: Option<Colour>,
    pub bg: Option<Colour>,
    pub emphasis: Vec<Emphasis>,
}

/// A theme file: the roles it sets (the others keep the default style).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThemeSpec {
    pub styles: BTreeMap<String, StyleSpec>,
}

/// The bundled themes, by name.
pub const BUNDLED: &[(&str, &str)] = &[
    ("dark", include_str!("../../assets/themes/dark.toml")),
    ("light", include_str!("../../assets/themes/light.toml")),
    ("mono", include_str!("../../assets/themes/mono.toml")),
];

/// Every role a theme file may set.
pub const ROLES: &[&str] = &[
    "base",
    "title",
    "dim",
    "accent",
    "border",
    "border_focus",
    "selected",
    "table_header",
    "tab_active",
    "tab_inactive",
    "working",
    "input",
    "completed",
    "failed",
    "cancelled",
    "unknown",
    "pending_op",
    "gauge_fill",
    "gauge_empty",
    "healthy",
    "degraded",
    "info",
    "warn",
    "error",
    "key",
    "heading",
    "label",
    "code",
    "link",
    "host",
    "required",
    "field_focus",
    "cursor",
];

fn color(word: &str) -> Option<Colour> {
    if let Some(hex) = word.strip_prefix('#') {
        if hex.len() == 6 {
            let v = u32::from_str_radix(hex, 16).ok()?;
            return Some(Colour::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return None;
    }
    Some(match word {
        "reset" | "default" => Colour::Reset,
        "black" => Colour::Black,
        "red" => Colour::Red,
        "green" => Colour::Green,
        "yellow" => Colour::Yellow,
        "blue" => Colour::Blue,
        "magenta" => Colour::Magenta,
        "cyan" => Colour::Cyan,
        "gray" | "grey" => Colour::Gray,
        "darkgray" | "darkgrey" => Colour::DarkGray,
        "lightred" => Colour::LightRed,
        "lightgreen" => Colour::LightGreen,
        "lightyellow" => Colour::LightYellow,
        "lightblue" => Colour::LightBlue,
        "lightmagenta" => Colour::LightMagenta,
        "lightcyan" => Colour::LightCyan,
        "white" => Colour::White,
        _ => return None,
    })
}

fn modifier(word: &str) -> Option<Emphasis> {
    Some(match word {
        "bold" => Emphasis::Bold,
        "dim" => Emphasis::Dim,
        "italic" => Emphasis::Italic,
        "underlined" => Emphasis::Underlined,
        "reversed" => Emphasis::Reversed,
        "crossed" => Emphasis::Crossed,
        _ => return None,
    })
}

/// Parse a style spec: `[FG] [on BG] [MODIFIER…]`, or `none` for the plain style.
pub fn parse_style(spec: &str) -> Result<StyleSpec, String> {
    let mut style = StyleSpec::default();
    let mut words = spec.split_whitespace().map(str::to_ascii_lowercase);
    while let Some(w) = words.next() {
        if w == "none" {
            continue;
        }
        if w == "on" {
            let bg = words.next().ok_or("`on` needs a colour")?;
            style.bg = Some(color(&bg).ok_or_else(|| format!("unknown colour {bg:?}"))?);
        } else if let Some(c) = color(&w) {
            style.fg = Some(c);
        } else if let Some(m) = modifier(&w) {
            style.emphasis.push(m);
        } else {
            return Err(format!(
                "unknown word {w:?} (colours: black red green yellow blue magenta cyan gray \
                 darkgray white light*, #rrggbb; modifiers: bold dim italic underlined \
                 reversed crossed)"
            ));
        }
    }
    Ok(style)
}

/// Parse a theme file. Errors name the line.
pub fn parse_theme(text: &str) -> Result<ThemeSpec, String> {
    let raw: BTreeMap<String, toml::Spanned<String>> =
        toml::from_str(text).map_err(|e| e.to_string().trim().to_string())?;
    let mut theme = ThemeSpec::default();
    for (role, spec) in raw {
        let line = line_of(text, spec.span().start);
        if !ROLES.contains(&role.as_str()) {
            return Err(format!(
                "line {line}: unknown role {role:?} (roles: {})",
                ROLES.join(", ")
            ));
        }
        let style = parse_style(spec.get_ref()).map_err(|e| format!("line {line}: {role}: {e}"))?;
        theme.styles.insert(role, style);
    }
    Ok(theme)
}

/// 1-based line number of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A bundled theme by name.
pub fn bundled(name: &str) -> Option<ThemeSpec> {
    BUNDLED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| parse_theme(text).expect("bundled themes parse (tested)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_themes_parse() {
        for (name, text) in BUNDLED {
            parse_theme(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let mono = bundled("mono").unwrap();
        assert!(
            mono.styles.values().all(|s| s.fg.is_none()),
            "mono has no colours"
        );
    }

    #[test]
    fn style_specs() {
        assert_eq!(
            parse_style("black on yellow bold").unwrap(),
            StyleSpec {
                fg: Some(Colour::Black),
                bg: Some(Colour::Yellow),
                emphasis: vec![Emphasis::Bold],
            }
        );
        assert_eq!(
            parse_style("#102030").unwrap().fg,
            Some(Colour::Rgb(16, 32, 48))
        );
        assert_eq!(parse_style("none").unwrap(), StyleSpec::default());
        assert!(parse_style("sparkly").unwrap_err().contains("sparkly"));
        assert!(parse_style("red on").is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let err = parse_theme("title = \"cyan\"\n\nworking = \"blurple\"\n").unwrap_err();
        assert!(err.starts_with("line 3: working"), "{err}");
        let err = parse_theme("title = \"cyan\"\nsparkle = \"red\"\n").unwrap_err();
        assert!(err.starts_with("line 2: unknown role"), "{err}");
        let err = parse_theme("title = \n").unwrap_err();
        assert!(err.contains("line 1"), "{err}");
    }
}
