//! The console's layout under text that arrives on its own: a status or error line that
//! fills (a draft saved a moment after a change, an answer, an error) moves no button, so
//! a click aimed at a button as the text arrives still lands on it.

use vitrine_testkit::browser;

use super::helpers::*;

/// For each status or error line shown, the buttons (by id or text) whose place on the
/// page changed when the line got a sentence, and by how many pixels.
const MOVED_BY_A_LINE: &str = "
const place = () => new Map([...document.querySelectorAll('button')]
  .filter((b) => b.offsetParent !== null)
  .map((b) => [b.id || b.textContent, b.getBoundingClientRect().top + window.scrollY]));
const moved = {};
const lines = [...document.querySelectorAll('p[role=status], p[role=alert]')]
  .filter((p) => p.offsetParent !== null);
for (const line of lines) {
  const kept = line.textContent;
  line.textContent = '';
  const before = place();
  line.textContent = 'Draft by merchandiser, just now, kept on the server.';
  const after = place();
  line.textContent = kept;
  const shifted = [...before].filter(([id, top]) => after.get(id) !== top)
    .map(([id, top]) => id + ' by ' + (after.get(id) - top) + ' px');
  if (shifted.length) moved[line.id] = shifted;
}
return { lines: lines.map((p) => p.id), moved };
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_line_that_fills_moves_no_button() {
    let server = tokio::task::block_in_place(store);
    let driver = tokio::task::block_in_place(browser::Driver::start)
        .expect("chromedriver (Debian chromium-driver; scripts/test installs it)");
    let editor = session(&driver).await;
    log_in(&editor, server.addr(), EDITOR).await;
    let answer = editor.execute(MOVED_BY_A_LINE, Vec::new()).await.unwrap();
    let lines: Vec<&str> = answer["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for line in [
        "sb-draft",
        "sb-message",
        "sb-error",
        "cz-draft",
        "cz-message",
    ] {
        assert!(lines.contains(&line), "{line} is not among {lines:?}");
    }
    assert_eq!(answer["moved"], serde_json::json!({}), "{answer}");
    editor.close().await.unwrap();
}
