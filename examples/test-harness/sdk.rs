//! Serves the example's own binary and runs a Python `langgraph-sdk` script against it
//! (the SDK pinned in tests/sdk/requirements.txt, installed once into tests/sdk/.venv).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The example's binary, serving on a free port with its own SQLite file.
pub(crate) struct Served {
    /// `http://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// A scratch directory for the run (the database, the example's files).
    pub(crate) dir: PathBuf,
    _child: Child,
}

impl Served {
    /// Starts `bin` with `env` and waits for its `palgraph listening on` line.
    pub(crate) async fn start(bin: &str, name: &str, env: &[(&str, String)]) -> Served {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new(bin);
        cmd.env("PALGRAPH_PORT", "0")
            .env("PALGRAPH_DB", dir.join("palgraph.db"))
            .env("RUST_LOG", "warn")
            .env_remove("DATABASE_URL")
            .env_remove("OPENAI_API_KEY")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start the example");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the example printed its address in time")
            .unwrap()
            .expect("the example exited before listening");
        let base = line
            .strip_prefix("palgraph listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .trim()
            .to_string();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Served {
            base,
            dir,
            _child: child,
        }
    }
}

/// The virtualenv's python with the pinned SDK (made once per requirements).
pub(crate) fn venv_python(sdk_dir: &Path) -> PathBuf {
    let run = |cmd: &mut std::process::Command, what: &str| {
        let status = cmd.stdin(Stdio::null()).status();
        let status = status.unwrap_or_else(|e| panic!("{what}: {e} (python3 is needed)"));
        assert!(status.success(), "{what} failed: {status}");
    };
    let venv = sdk_dir.join(".venv");
    let python = venv.join("bin").join("python");
    let requirements = sdk_dir.join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).unwrap();
    let stamp = venv.join(".palgraph-requirements");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&*wanted) {
        return python;
    }
    if !python.exists() {
        let mut venv_cmd = std::process::Command::new("python3");
        run(venv_cmd.args(["-m", "venv"]).arg(&venv), "python3 -m venv");
    }
    let mut pip = std::process::Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "-r",
    ])
    .arg(&requirements);
    run(&mut pip, "pip install -r requirements.txt");
    std::fs::write(&stamp, &wanted).unwrap();
    python
}

/// Runs `script` with `args` on the venv's python; it must pass within 150 s.
pub(crate) async fn run_script(sdk_dir: &Path, script: &str, args: &[&str]) {
    let dir = sdk_dir.to_path_buf();
    let python = tokio::task::spawn_blocking(move || venv_python(&dir))
        .await
        .unwrap();
    let child = Command::new(python)
        .arg(sdk_dir.join(script))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run python");
    let out = tokio::time::timeout(Duration::from_secs(150), child.wait_with_output())
        .await
        .expect("the SDK script finished within 150 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script} failed: {}", out.status);
    assert!(stdout.contains("checks passed"), "{script} ran to its end");
}
