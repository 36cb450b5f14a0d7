//! The fuzzer in the test suite: every target from its checked-in seed corpus for a
//! short run, and every input under `regressions/` (inputs that once made a parser
//! panic) replayed. `vitrine-fuzz` runs the long campaigns (README).

use std::path::Path;

use vitrine_fuzz::{Target, fuzz, run_one, seeds};

#[test]
fn every_parser_answers_mutated_seeds_without_a_panic() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for target in Target::ALL {
        let seeds = seeds(target, &corpus).unwrap_or_default();
        assert!(!seeds.is_empty(), "no seeds for {}", target.name());
        let outcome = fuzz(target, &seeds, 20_000, 7);
        assert_eq!(outcome.execs, 20_000);
        assert!(
            outcome.findings.is_empty(),
            "{}: {:?}",
            target.name(),
            outcome
                .findings
                .iter()
                .map(|f| (&f.message, String::from_utf8_lossy(&f.input)))
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn every_regression_input_is_answered_without_a_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut replayed = 0;
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(target) = name.split('-').next().and_then(Target::of_name) else {
            continue;
        };
        let input = std::fs::read(&path).unwrap_or_default();
        assert_eq!(run_one(target, &input), None, "{name}");
        replayed += 1;
    }
    assert!(replayed > 0, "the regressions directory holds inputs");
}
