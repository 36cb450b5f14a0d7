//! The SFTP server against real clients: OpenSSH's `sftp` in batch mode (its password
//! given by `SSH_ASKPASS`) and Python's paramiko (`scripts/paramiko`, on
//! `PARAMIKO_PATH`), uploading feeds as the vendor's .NET SDK does: a product feed with
//! its account prices, checked in the data; wrong passwords and the failed-login limit;
//! one account's area closed to another and to paths that climb out; an interrupted or
//! oversized upload never applied; no shell, no command; the host key kept across a
//! restart.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{DEMO_KEY, DEMO_SECRET, Server, wait_for};

const OTHER_KEY: &str = "other-shop";
const OTHER_SECRET: &str = "other-shop-secret";
/// An account of the other region: this server does not serve it, by any door.
const US_KEY: &str = "us-shop";
const US_SECRET: &str = "us-shop-secret";
const MAX_BYTES: usize = 200_000;

fn config() -> String {
    format!(
        r#"
region = "eu"
[sftp]
listen = "127.0.0.1:0"
max_failed_logins_per_minute = 4
[feeds]
max_bytes = {MAX_BYTES}
[[accounts]]
access_key = "{DEMO_KEY}"
secret_key = "{DEMO_SECRET}"
default_currency = "GBP"
demo_catalogue = true
  [[accounts.zones]]
  id = "RV"
  title = "Recently viewed"
  type = "recommender-product"
  strategy = "recently_viewed"
  count = 5
[[accounts]]
access_key = "{OTHER_KEY}"
secret_key = "{OTHER_SECRET}"
default_currency = "GBP"
demo_catalogue = true
[[accounts]]
access_key = "{US_KEY}"
secret_key = "{US_SECRET}"
region = "us"
default_currency = "USD"
demo_catalogue = true
"#
    )
}

fn start(dir: Option<tempfile::TempDir>) -> Server {
    let env = [("VITRINE_LOG_FORMAT", "json")];
    match dir {
        None => Server::with_env(&config(), &env),
        Some(dir) => Server::start_in_with_env(dir, Some(&config()), &env),
    }
}

/// The SFTP address and host key fingerprint the server logged (its latest start).
fn sftp_of(server: &Server) -> (SocketAddr, String) {
    wait_for(
        "the SFTP address in the log",
        Duration::from_secs(240),
        || {
            server.log().lines().rev().find_map(|line| {
                let entry: Value = serde_json::from_str(line).ok()?;
                let addr = entry["message"]
                    .as_str()?
                    .strip_prefix("sftp listening on ")?
                    .parse()
                    .ok()?;
                Some((addr, entry["fingerprint"].as_str()?.to_owned()))
            })
        },
    )
}

/// A product feed as the .NET SDK uploads it: products, and account prices by `Sku`.
fn product_feed(id: &str) -> Value {
    json!({
        "Products": [
            {"Id": id, "Sku": format!("{id}-SKU"), "Title": "Uploaded product", "Link": format!("/p/{id}"),
                "Image": "https://shop.example/u.png", "Prices": ["30.00 GBP"], "Categories": ["c1"]},
            {"Id": format!("{id}-B"), "Title": "Another", "Link": "/p/b",
                "Image": "https://shop.example/b.png", "Prices": ["12.00 GBP"], "Categories": ["c1"]}
        ],
        "AccountPrices": [{"AccountId": "b2b-9", "Sku": format!("{id}-SKU"), "Prices": ["21.00 GBP"]}]
    })
}

/// Runs OpenSSH's `sftp -b` with `commands`, logging in as `user` with `password`.
/// `known_hosts` records the host key under one alias (whatever the port), accepted
/// the first time unless `strict`.
fn openssh(
    addr: SocketAddr,
    user: &str,
    password: &str,
    commands: &str,
    work: &Path,
    strict: bool,
) -> Output {
    let askpass = work.join("askpass.sh");
    std::fs::write(
        &askpass,
        "#!/bin/sh\nprintf '%s\\n' \"$VITRINE_SFTP_PASSWORD\"\n",
    )
    .unwrap();
    let batch = work.join("batch.txt");
    std::fs::write(&batch, commands).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let checking = if strict { "yes" } else { "accept-new" };
    Command::new("sftp")
        // Before `-b` (which asks for BatchMode): ssh keeps the first value, so the
        // password still comes from SSH_ASKPASS.
        .arg("-oBatchMode=no")
        .arg("-b")
        .arg(&batch)
        .arg(format!("-oStrictHostKeyChecking={checking}"))
        .arg(format!(
            "-oUserKnownHostsFile={}",
            work.join("known_hosts").display()
        ))
        .arg("-oHostKeyAlias=vitrine-sftp-test")
        .arg("-oPreferredAuthentications=password")
        .arg("-oPubkeyAuthentication=no")
        .arg("-oNumberOfPasswordPrompts=1")
        .arg("-oConnectTimeout=60")
        .arg("-P")
        .arg(addr.port().to_string())
        .arg(format!("{user}@{}", addr.ip()))
        .current_dir(work)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .env("VITRINE_SFTP_PASSWORD", password)
        .stdin(Stdio::null())
        .output()
        .expect("running OpenSSH's sftp (scripts/test installs openssh-client)")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs a Python script with paramiko, given the server's address and the arguments;
/// returns its stdout (it must exit 0).
fn paramiko(script: &str, args: &[&str]) -> String {
    let path = std::env::var("PARAMIKO_PATH")
        .expect("PARAMIKO_PATH is not set: run the tests with scripts/test (scripts/paramiko)");
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .env("PYTHONPATH", path)
        .stdin(Stdio::null())
        .output()
        .expect("running python3");
    assert!(
        out.status.success(),
        "paramiko script failed: {}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The status item of a feed token of `key`'s account.
fn feed_status(server: &Server, key: &str, token: &str) -> Value {
    let resp = server.post_json(
        "/api/productfeedstatus",
        &json!({"AppKey": key, "Tokens": [token]}),
    );
    assert_eq!(resp.status, 200, "{}", resp.body);
    resp.json()[0].clone()
}

fn feed_settled(server: &Server, token: &str) -> Value {
    wait_for(&format!("feed {token}"), Duration::from_secs(240), || {
        let item = feed_status(server, DEMO_KEY, token);
        (item["Status"] != "Processing").then_some(item)
    })
}

/// The recently-viewed item `id` for a visitor of B2B account `accid` (if any).
fn shown(server: &Server, visitor: &str, accid: Option<&str>, id: &str) -> Value {
    let mut events = Vec::new();
    if let Some(accid) = accid {
        events
            .push(json!({"name": "customer_details", "data": {"userid": visitor, "accid": accid}}));
    }
    events.push(json!({"name": "product_view", "data": {"id": id}}));
    server.serverside(json!({"visitorId": visitor, "events": events}));
    let resp = server.serverside(json!({"visitorId": visitor, "zones": ["RV"],
        "events": [{"name": "page_view", "data": {"page_type": "homepage"}}]}));
    resp.json()["zones"]["RV"]["items"][0].clone()
}

#[test]
fn an_openssh_upload_becomes_a_complete_feed_with_its_account_prices() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("feed.json"),
        serde_json::to_vec(&product_feed("SFTP-1")).unwrap(),
    )
    .unwrap();
    let name = "PureClarityFeed-20261126120000.json";
    let out = openssh(
        addr,
        DEMO_KEY,
        DEMO_SECRET,
        &format!("put feed.json {name}\nls -l\n"),
        work.path(),
        false,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(name),
        "{}",
        text(&out)
    );

    let status = feed_settled(&server, name);
    assert_eq!(status["Status"], "Complete", "{status}");
    let item = shown(&server, "sftp-shopper", None, "SFTP-1");
    assert_eq!(item["Id"], "SFTP-1", "{item}");
    assert_eq!(item["DisplayPrice"], "£30.00", "{item}");
    // The feed's account price, named by Sku, is shown to its B2B buyer.
    let b2b = shown(&server, "sftp-buyer", Some("b2b-9"), "SFTP-1");
    assert_eq!(b2b["DisplayPrice"], "£21.00", "{b2b}");

    // The same name again: a second job, under a token of its own.
    let out = openssh(
        addr,
        DEMO_KEY,
        DEMO_SECRET,
        &format!("put feed.json {name}\n"),
        work.path(),
        false,
    );
    assert!(out.status.success(), "{}", text(&out));
    let again = wait_for("the second upload's feed", Duration::from_secs(240), || {
        let item = feed_status(&server, DEMO_KEY, &format!("{name}~2"));
        (item["Status"] == "Complete").then_some(item)
    });
    assert_eq!(again["Status"], "Complete");
}

#[test]
fn wrong_passwords_are_refused_and_then_every_login_from_the_address() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let work = tempfile::tempdir().unwrap();
    for (user, password) in [(DEMO_KEY, "wrong"), ("nobody", DEMO_SECRET)] {
        let out = openssh(addr, user, password, "ls\n", work.path(), false);
        assert!(!out.status.success(), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
            "{}",
            text(&out)
        );
    }
    // Past the limit (4 failures a minute), even the right password is refused.
    let script = r#"
import sys, paramiko
host, port = sys.argv[1], int(sys.argv[2])
def login(user, password):
    t = paramiko.Transport((host, port))
    t.connect()
    try:
        t.auth_password(user, password)
        return "ok"
    except paramiko.AuthenticationException:
        return "refused"
    finally:
        t.close()
print(",".join(login(sys.argv[3], p) for p in ["bad-1", "bad-2", "bad-3", sys.argv[4]]))
"#;
    let port = addr.port().to_string();
    let results = paramiko(script, &["127.0.0.1", &port, DEMO_KEY, DEMO_SECRET]);
    assert_eq!(results.trim(), "refused,refused,refused,refused");
    assert!(
        server
            .log()
            .contains("SFTP login refused: too many failed logins from this address")
    );
}

/// SFTP logins go through the account check every HTTP door uses: an account of the
/// other region is refused with its right password, as `/api/serverside` refuses it.
#[test]
fn an_account_of_the_other_region_is_refused_as_on_every_door() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let work = tempfile::tempdir().unwrap();
    let refused = openssh(addr, US_KEY, US_SECRET, "ls\n", work.path(), false);
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Permission denied"),
        "{}",
        text(&refused)
    );
    assert!(
        server.log().contains("serves region eu"),
        "the log says why: {}",
        server.log()
    );
    let http = server.post_json(
        "/api/serverside",
        &json!({"appId": US_KEY, "secretKey": US_SECRET, "currentUrl": "https://shop.example/",
            "userAgent": "test"}),
    );
    assert_eq!(http.status, 403, "{}", http.body);
    // This region's account logs in.
    let out = openssh(addr, OTHER_KEY, OTHER_SECRET, "ls\n", work.path(), false);
    assert!(out.status.success(), "{}", text(&out));
}

/// Eight sessions upload a file of the same name and close it at the same moment:
/// each becomes a job of its own (the name, then `~2` … `~8`), and each completes.
#[test]
fn concurrent_uploads_of_one_name_all_become_jobs_and_all_complete() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let work = tempfile::tempdir().unwrap();
    let feed = work.path().join("feed.json");
    std::fs::write(&feed, serde_json::to_vec(&product_feed("SAME-1")).unwrap()).unwrap();
    let name = "PureClarityFeed-20261128000000.json";
    // Each thread opens its session and writes the whole file, waits for the others at
    // a barrier, then closes its file: the closes race.
    let script = r#"
import sys, threading, paramiko
host, port, user, password, local, remote = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
data = open(local, "rb").read()
n = 8
barrier = threading.Barrier(n)
errors = []
def upload():
    try:
        t = paramiko.Transport((host, port))
        t.connect(username=user, password=password)
        sftp = paramiko.SFTPClient.from_transport(t)
        f = sftp.open(remote, "wb")
        f.write(data)
        f.flush()
        barrier.wait(timeout=120)
        f.close()
        sftp.close()
        t.close()
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=upload) for _ in range(n)]
for th in threads: th.start()
for th in threads: th.join()
print("errors:" + ";".join(errors) if errors else "ok")
"#;
    let port = addr.port().to_string();
    let local = feed.display().to_string();
    let result = paramiko(
        script,
        &["127.0.0.1", &port, DEMO_KEY, DEMO_SECRET, &local, name],
    );
    assert_eq!(result.trim(), "ok");
    let tokens: Vec<String> = std::iter::once(name.to_owned())
        .chain((2..=8).map(|n| format!("{name}~{n}")))
        .collect();
    for token in &tokens {
        let status = feed_settled(&server, token);
        assert_eq!(status["Status"], "Complete", "{token}: {status}");
    }
    // No ninth: eight uploads, eight jobs.
    let ninth = feed_status(&server, DEMO_KEY, &format!("{name}~9"));
    assert_ne!(ninth["Status"], "Complete", "{ninth}");
    assert_ne!(ninth["Status"], "Processing", "{ninth}");
}

#[test]
fn an_account_sees_only_its_own_area_and_no_path_leaves_it() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("feed.json"),
        serde_json::to_vec(&product_feed("MINE-1")).unwrap(),
    )
    .unwrap();
    let out = openssh(
        addr,
        DEMO_KEY,
        DEMO_SECRET,
        "put feed.json mine.json\n",
        work.path(),
        false,
    );
    assert!(out.status.success(), "{}", text(&out));

    // paramiko, as the other account: its listing is its own, reading is refused, and
    // every path out of the area is refused or stays inside it.
    let script = r#"
import sys, paramiko
t = paramiko.Transport((sys.argv[1], int(sys.argv[2])))
t.connect(username=sys.argv[3], password=sys.argv[4])
s = paramiko.SFTPClient.from_transport(t)
print("list", sorted(s.listdir("/")))
print("root", s.normalize("../../.."))
for path in ["mine.json", "../demo-access-key/sftp/mine.json", "/etc/passwd"]:
    try:
        s.open(path, "r").read()
        print("read", path, "allowed")
    except IOError as e:
        print("read", path, "refused")
for path in ["../escape.json", "../../etc/cron.d/x.json", "sub/dir.json", "notes.txt"]:
    try:
        f = s.open(path, "w"); f.write(b"{}"); f.close()
        print("write", path, "allowed")
    except IOError as e:
        print("write", path, "refused")
for call in [lambda: s.remove("mine.json"), lambda: s.rename("a.json", "b.json"), lambda: s.mkdir("d")]:
    try:
        call(); print("change allowed")
    except IOError:
        print("change refused")
try:
    c = t.open_session(); c.exec_command("id"); print("exec", c.recv_exit_status())
except paramiko.SSHException:
    print("exec refused")
t.close()
"#;
    let port = addr.port().to_string();
    let out = paramiko(script, &["127.0.0.1", &port, OTHER_KEY, OTHER_SECRET]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "list []",
            "root /",
            "read mine.json refused",
            "read ../demo-access-key/sftp/mine.json refused",
            "read /etc/passwd refused",
            "write ../escape.json refused",
            "write ../../etc/cron.d/x.json refused",
            "write sub/dir.json refused",
            "write notes.txt refused",
            "change refused",
            "change refused",
            "change refused",
            "exec refused",
        ],
        "{out}"
    );
    // Nothing was written outside the areas, and the other account ran no feed.
    assert!(!server.data_path().join("escape.json").exists());
    let status = feed_status(&server, OTHER_KEY, "mine.json");
    assert_eq!(status["Status"], "Error", "{status}");
    // OpenSSH's own client gets no shell and no command either.
    let ssh = Command::new("ssh")
        .args([
            "-oBatchMode=no",
            "-oStrictHostKeyChecking=no",
            "-oUserKnownHostsFile=/dev/null",
            "-oPreferredAuthentications=password",
            "-oNumberOfPasswordPrompts=1",
            "-p",
            &port,
            &format!("{DEMO_KEY}@127.0.0.1"),
            "cat /etc/passwd",
        ])
        .env("SSH_ASKPASS", work.path().join("askpass.sh"))
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("VITRINE_SFTP_PASSWORD", DEMO_SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!ssh.status.success(), "{}", text(&ssh));
    assert!(!String::from_utf8_lossy(&ssh.stdout).contains("root:"));
}

#[test]
fn interrupted_and_oversized_uploads_are_never_applied() {
    let server = start(None);
    let (addr, _) = sftp_of(&server);
    let before = server
        .post_json(
            "/api/plugin/dashboard",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
        )
        .json()["Store"]["Products"]
        .clone();
    // paramiko writes most of a valid feed, then the connection drops with the file
    // still open.
    let script = r#"
import sys, json, paramiko
t = paramiko.Transport((sys.argv[1], int(sys.argv[2])))
t.connect(username=sys.argv[3], password=sys.argv[4])
s = paramiko.SFTPClient.from_transport(t)
f = s.open("interrupted.json", "w")
body = sys.argv[5].encode()
f.write(body[: len(body) - 3])
f.flush()
t.sock.close()
print("dropped")
"#;
    let port = addr.port().to_string();
    let feed = serde_json::to_string(&product_feed("CUT-1")).unwrap();
    let out = paramiko(script, &["127.0.0.1", &port, DEMO_KEY, DEMO_SECRET, &feed]);
    assert_eq!(out.trim(), "dropped");
    wait_for(
        "the abandoned upload in the log",
        Duration::from_secs(240),
        || {
            server
                .log()
                .contains("an SFTP upload ended before its file was closed; it was not applied")
                .then_some(())
        },
    );
    assert_eq!(
        feed_status(&server, DEMO_KEY, "interrupted.json")["Status"],
        "Error"
    );
    let leftovers: Vec<PathBuf> =
        std::fs::read_dir(crate::common::account_dir(&server.data_path(), DEMO_KEY).join("sftp"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
    assert_eq!(leftovers, Vec::<PathBuf>::new());

    // Over feeds.max_bytes: the write fails and the file is dropped.
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("big.json"), vec![b' '; MAX_BYTES + 1]).unwrap();
    let out = openssh(
        addr,
        DEMO_KEY,
        DEMO_SECRET,
        "put big.json big.json\n",
        work.path(),
        false,
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(
        feed_status(&server, DEMO_KEY, "big.json")["Status"],
        "Error"
    );
    let after = server
        .post_json(
            "/api/plugin/dashboard",
            &json!({"AccessKey": DEMO_KEY, "SecretKey": DEMO_SECRET}),
        )
        .json()["Store"]["Products"]
        .clone();
    assert_eq!(before, after);
}

#[test]
fn the_host_key_is_kept_across_restarts() {
    let server = start(None);
    let (addr, first) = sftp_of(&server);
    assert!(first.starts_with("SHA256:"), "{first}");
    let work = tempfile::tempdir().unwrap();
    let out = openssh(addr, DEMO_KEY, DEMO_SECRET, "ls\n", work.path(), false);
    assert!(out.status.success(), "{}", text(&out));

    let dir = server.kill9();
    let server = start(Some(dir));
    let (addr, second) = sftp_of(&server);
    assert_eq!(first, second);
    // The client that recorded the key connects strictly: the key is the same one.
    let out = openssh(addr, DEMO_KEY, DEMO_SECRET, "ls\n", work.path(), true);
    assert!(out.status.success(), "{}", text(&out));

    // A server with another data directory has another key, which that client refuses.
    let other = start(None);
    let (other_addr, third) = sftp_of(&other);
    assert_ne!(first, third);
    let out = openssh(other_addr, DEMO_KEY, DEMO_SECRET, "ls\n", work.path(), true);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Host key verification failed"),
        "{}",
        text(&out)
    );
}
