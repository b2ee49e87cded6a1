//! Configuration and theme files are read with a bound: a huge file or an endless one
//! (`/dev/zero`) fails fast with a clear error instead of growing memory.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::Taskrail;
use taskrail::cli::exit;

const LIMIT: Duration = Duration::from_secs(30);

/// `taskrail ARGS` under a 4 GiB address-space limit, so a regression cannot eat the machine.
fn run_limited(tr: &Taskrail, args: &[&str]) -> support::taskrail::Run {
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -v 4194304; exec \"$0\" \"$@\"",
            support::taskrail::bin(),
        ])
        .args(args)
        .env("TASKRAIL_DB", tr.db())
        .env("TASKRAIL_LOG", tr.log())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run taskrail");
    support::taskrail::Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn an_endless_config_file_fails_fast() {
    let tr = Taskrail::new();
    let started = std::time::Instant::now();
    let run = run_limited(&tr, &["--config", "/dev/zero", "ls"]);
    assert!(started.elapsed() < LIMIT);
    assert_eq!(run.code, Some(exit::USAGE.into()), "{run:#?}");
    assert!(run.stderr.contains("larger than"), "{}", run.stderr);
}

#[test]
fn a_huge_config_or_theme_file_is_refused_with_its_bound() {
    let tr = Taskrail::new();
    let big = tr.dir().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let run = tr.run(&["--config", big.to_str().unwrap(), "ls"], LIMIT);
    assert_eq!(run.code, Some(exit::USAGE.into()), "{run:#?}");
    assert!(run.stderr.contains("larger than"), "{}", run.stderr);

    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        format!("theme = {:?}\n", big.display().to_string()),
    )
    .unwrap();
    let run = tr.run(&["--config", config.to_str().unwrap(), "ls"], LIMIT);
    assert_eq!(run.code, Some(exit::USAGE.into()), "{run:#?}");
    assert!(run.stderr.contains("larger than"), "{}", run.stderr);

    std::fs::write(&config, "theme = \"/dev/zero\"\n").unwrap();
    let run = run_limited(&tr, &["--config", config.to_str().unwrap(), "ls"]);
    assert_eq!(run.code, Some(exit::USAGE.into()), "{run:#?}");
    assert!(run.stderr.contains("larger than"), "{}", run.stderr);
}
