//! Themes as TOML: the bundled ones under `assets/themes/` and user files. A theme file
//! maps role names (`title`, `working`, `error`, …) to a style spec such as
//! `"cyan bold"`, `"black on yellow bold"` or `"#5f87af underlined"`; roles it leaves out
//! keep the default theme's style. Must not hold state or read files (callers pass text).

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};

use super::Theme;

/// The bundled themes, by name.
pub const BUNDLED: &[(&str, &str)] = &[
    ("dark", include_str!("../../assets/themes/dark.toml")),
    ("light", include_str!("../../assets/themes/light.toml")),
    ("mono", include_str!("../../assets/themes/mono.toml")),
];

macro_rules! roles {
    ($($role:ident),* $(,)?) => {
        /// Every role a theme file may set.
        pub const ROLES: &[&str] = &[$(stringify!($role)),*];

        fn role_mut<'a>(theme: &'a mut Theme, name: &str) -> Option<&'a mut Style> {
            match name {
                $(stringify!($role) => Some(&mut theme.$role),)*
                _ => None,
            }
        }
    };
}

roles!(
    base,
    title,
    dim,
    accent,
    border,
    border_focus,
    selected,
    table_header,
    tab_active,
    tab_inactive,
    working,
    input,
    completed,
    failed,
    cancelled,
    unknown,
    pending_op,
    gauge_fill,
    gauge_empty,
    healthy,
    degraded,
    info,
    warn,
    error,
    key,
    heading,
    label,
    code,
    link,
    host,
    required,
    field_focus,
    cursor,
);

fn color(word: &str) -> Option<Color> {
    if let Some(hex) = word.strip_prefix('#') {
        if hex.len() == 6 {
            let v = u32::from_str_radix(hex, 16).ok()?;
            return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return None;
    }
    Some(match word {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => return None,
    })
}

fn modifier(word: &str) -> Option<Modifier> {
    Some(match word {
        "bold" => Modifier::BOLD,
        "dim" => Modifier::DIM,
        "italic" => Modifier::ITALIC,
        "underlined" => Modifier::UNDERLINED,
        "reversed" => Modifier::REVERSED,
        "crossed" => Modifier::CROSSED_OUT,
        _ => return None,
    })
}

/// Parse a style spec: `[FG] [on BG] [MODIFIER…]`, or `none` for the plain style.
pub fn parse_style(spec: &str) -> Result<Style, String> {
    let mut style = Style::new();
    let mut words = spec.split_whitespace().map(str::to_ascii_lowercase);
    while let Some(w) = words.next() {
        if w == "none" {
            continue;
        }
        if w == "on" {
            let bg = words.next().ok_or("`on` needs a colour")?;
            style = style.bg(color(&bg).ok_or_else(|| format!("unknown colour {bg:?}"))?);
        } else if let Some(c) = color(&w) {
            style = style.fg(c);
        } else if let Some(m) = modifier(&w) {
            style = style.add_modifier(m);
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

/// Parse a theme file over the default theme. Errors name the line.
pub fn parse_theme(text: &str) -> Result<Theme, String> {
    let raw: BTreeMap<String, toml::Spanned<String>> =
        toml::from_str(text).map_err(|e| e.to_string().trim().to_string())?;
    let mut theme = Theme::default();
    for (role, spec) in raw {
        let line = line_of(text, spec.span().start);
        let slot = role_mut(&mut theme, &role).ok_or_else(|| {
            format!(
                "line {line}: unknown role {role:?} (roles: {})",
                ROLES.join(", ")
            )
        })?;
        *slot = parse_style(spec.get_ref()).map_err(|e| format!("line {line}: {role}: {e}"))?;
    }
    Ok(theme)
}

/// 1-based line number of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A bundled theme by name.
pub fn bundled(name: &str) -> Option<Theme> {
    BUNDLED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| parse_theme(text).expect("bundled themes parse (tested)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_themes_parse_and_dark_is_the_default() {
        for (name, text) in BUNDLED {
            parse_theme(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(bundled("dark"), Some(Theme::default()));
        assert_ne!(bundled("light"), Some(Theme::default()));
        let mono = bundled("mono").unwrap();
        assert_eq!(mono.failed.fg, None, "mono has no colours");
    }

    #[test]
    fn style_specs() {
        assert_eq!(
            parse_style("black on yellow bold").unwrap(),
            Style::new()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD)
        );
        assert_eq!(
            parse_style("#102030").unwrap(),
            Style::new().fg(Color::Rgb(16, 32, 48))
        );
        assert_eq!(parse_style("none").unwrap(), Style::new());
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
