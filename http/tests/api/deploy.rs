//! What operators install: `deploy/vitrine.service` (a systemd unit with `Type=notify`)
//! run as systemd would run it, and the `Dockerfile`'s health check command. The unit's
//! command line, with its paths pointed at a temporary directory, starts a server that
//! tells the notify socket it is ready, serves, answers the container's health check,
//! and says it is stopping on SIGTERM. (Building the container itself is a README
//! command: the tests do not need a container engine.)

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::binary;

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `key=value` settings of one section of a unit file, each key with its values.
fn section(unit: &str, name: &str) -> HashMap<String, Vec<String>> {
    let mut settings: HashMap<String, Vec<String>> = HashMap::new();
    let mut inside = false;
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == format!("[{name}]");
            continue;
        }
        if !inside || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            settings
                .entry(key.to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    settings
}

/// Waits for one datagram on the notify socket.
fn notified(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the time limit");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn the_systemd_unit_starts_a_server_that_notifies_serves_and_stops() {
    let unit = repo_file("deploy/vitrine.service");
    let service = section(&unit, "Service");
    let one = |key: &str| -> &str {
        match service.get(key).map(Vec::as_slice) {
            Some([value]) => value,
            other => panic!("[Service] {key}: {other:?}"),
        }
    };
    assert_eq!(one("Type"), "notify");
    assert_eq!(one("Restart"), "on-failure");
    assert_eq!(one("User"), "vitrine");
    assert_eq!(one("NoNewPrivileges"), "yes");
    assert_eq!(one("ProtectSystem"), "strict");
    assert!(one("LimitNOFILE").parse::<u64>().unwrap() >= 65536);
    assert!(one("ExecReload").contains("-HUP"));

    // The unit's command line and environment, its paths moved into a temporary
    // directory, and its address to a free port on loopback.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("vitrine.toml");
    std::fs::write(
        &config,
        "[[accounts]]\naccess_key = \"unit-shop\"\nsecret_key = \"unit-secret\"\n\
         default_currency = \"GBP\"\ndemo_catalogue = true\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let exec = one("ExecStart");
    let mut words = exec.split_whitespace().map(|word| match word {
        "/usr/local/bin/vitrine" => binary().to_owned(),
        "/etc/vitrine/vitrine.toml" => config.display().to_string(),
        "/var/lib/vitrine" => data.display().to_string(),
        other => other.to_owned(),
    });
    let program = words.next().unwrap();
    assert_eq!(program, binary(), "ExecStart runs /usr/local/bin/vitrine");
    let args: Vec<String> = words.collect();
    assert_eq!(args.first().map(String::as_str), Some("serve"), "{exec}");
    let mut env: HashMap<String, String> = service["Environment"]
        .iter()
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap();
            (key.to_owned(), value.to_owned())
        })
        .collect();
    assert_eq!(env["VITRINE_LISTEN"], "0.0.0.0:7480");
    env.insert("VITRINE_LISTEN".to_owned(), "127.0.0.1:0".to_owned());

    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(240)))
        .unwrap();
    let mut child = Command::new(&program)
        .args(&args)
        .envs(&env)
        .env("NOTIFY_SOCKET", &socket_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(notified(&socket).trim(), "READY=1");
    // Ready means serving: the ready line is out, and the address answers.
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap()
        .to_owned();
    assert!(
        data.is_dir(),
        "the data directory of the command line is used"
    );

    // The container's health check, as the Dockerfile runs it, against this server.
    let dockerfile = repo_file("Dockerfile");
    let check = dockerfile
        .lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("CMD [\"/usr/local/bin/vitrine\", \"health\"")
        })
        .expect("the Dockerfile's HEALTHCHECK runs `vitrine health`");
    assert!(check.contains("http://127.0.0.1:7480/healthz"), "{check}");
    let health = |url: &str| {
        Command::new(binary())
            .args(["health", "--url", url, "--timeout", "60"])
            .output()
            .unwrap()
    };
    let healthy = health(&format!("http://{addr}/healthz"));
    assert!(healthy.status.success(), "{healthy:?}");
    let missing = health(&format!("http://{addr}/no-such-path"));
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");

    // `systemctl stop`: SIGTERM, a notification, a clean exit.
    let stopped = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    assert_eq!(notified(&socket).trim(), "STOPPING=1");
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}
