//! The `[accounts.models]` table: bounds, pins, tuning and the errors that name each key.

use super::*;

#[test]
fn the_models_table_is_checked() {
    let models = |table: &str| {
        MINIMAL.replace(
            "default_currency = \"GBP\"",
            &format!("default_currency = \"GBP\"\n[accounts.models]\n{table}\n"),
        )
    };
    let parsed = |table: &str| parse(&models(table), "t", &Overrides::default()).unwrap();
    let config = parsed("partners = 256\nneighbours = 100");
    assert_eq!(
        config.accounts[0].models,
        ModelSettings {
            partners: 256,
            neighbours: 100,
            ..ModelSettings::default()
        }
    );
    let config = parsed("partner_damping = 0\nseed_damping = 1");
    assert_eq!(config.accounts[0].models.partner_damping, 0.0);
    assert_eq!(config.accounts[0].models.seed_damping, 1.0);
    // The co-purchase lists follow a configured seed damping unless given their own,
    // and read at 0 by default.
    assert_eq!(config.accounts[0].models.purchase_seed_damping, 1.0);
    let own = parsed("seed_damping = 1\npurchase_seed_damping = 0.25");
    assert_eq!(own.accounts[0].models.seed_damping, 1.0);
    assert_eq!(own.accounts[0].models.purchase_seed_damping, 0.25);
    let default = parsed("partners = 256");
    assert_eq!(default.accounts[0].models.seed_damping, 0.5);
    assert_eq!(default.accounts[0].models.purchase_seed_damping, 0.0);
    // A value given is pinned; the rest is tuned, unless tuning is off.
    use vitrine_engine::models::CoViewWindow;
    use vitrine_engine::tuning::{Pins, Tuning};
    assert_eq!(
        config.accounts[0].tuning,
        Tuning::Auto(Pins {
            co_view_window: None,
            partner_damping: Some(0.0),
            ..Pins::default()
        })
    );
    // The co-purchase lists start from the co-view lists' damping, not pinned by it.
    assert_eq!(config.accounts[0].models.purchase_partner_damping, 0.0);
    let config = parsed(
        "partner_damping = 0.25
co_purchase_window = 10
purchase_partner_damping = 0",
    );
    let models_read = config.accounts[0].models;
    assert_eq!(models_read.co_purchase_window, CoViewWindow::Ten);
    assert_eq!(models_read.purchase_partner_damping, 0.0);
    assert_eq!(models_read.partner_damping, 0.25);
    assert_eq!(
        config.accounts[0].tuning,
        Tuning::Auto(Pins {
            co_view_window: None,
            partner_damping: Some(0.25),
            co_purchase_window: Some(CoViewWindow::Ten),
            purchase_partner_damping: Some(0.0),
            ..Pins::default()
        })
    );
    let config = parsed("co_view_window = 3");
    assert_eq!(
        config.accounts[0].models.co_view_window,
        CoViewWindow::Three
    );
    assert_eq!(
        config.accounts[0].tuning,
        Tuning::Auto(Pins {
            co_view_window: Some(CoViewWindow::Three),
            ..Pins::default()
        })
    );
    let config = parsed("co_view_forward = 0.5\nco_purchase_forward = 1");
    assert_eq!(config.accounts[0].models.co_view_forward, 0.5);
    assert_eq!(config.accounts[0].models.co_purchase_forward, 1.0);
    // Sessions kept for similar_sessions: 0 (none) to 10,000,000.
    assert_eq!(parsed("sessions = 0").accounts[0].models.sessions, 0);
    assert_eq!(parsed("").accounts[0].models.sessions, 100_000);
    assert!(
        fails(&models("sessions = 10000001"))
            .contains("accounts[0].models.sessions: must be between 0 and 10000000, got 10000001")
    );
    // similar_sessions' neighbourhood: given, each pins its part of the grid.
    let config = parsed("session_neighbours = 40\nsession_steps = 3");
    assert_eq!(
        config.accounts[0].models.session_setting,
        vitrine_engine::models::SessionSetting {
            neighbours: 40,
            steps: 3
        }
    );
    assert_eq!(
        config.accounts[0].tuning,
        Tuning::Auto(Pins {
            session_neighbours: Some(40),
            session_steps: Some(3),
            ..Pins::default()
        })
    );
    assert_eq!(
        parsed("").accounts[0].models.session_setting,
        vitrine_engine::models::SessionSetting::default()
    );
    for (table, error) in [
        (
            "session_neighbours = 0",
            "accounts[0].models.session_neighbours: must be between 1 and 500, got 0",
        ),
        (
            "session_steps = 11",
            "accounts[0].models.session_steps: must be between 1 and 10, got 11",
        ),
    ] {
        assert!(fails(&models(table)).contains(error), "{table}");
    }
    // Given, the weights on direction are pinned.
    let config = parsed("co_view_forward = 0.5\nco_purchase_forward = 1");
    assert_eq!(
        config.accounts[0].tuning,
        Tuning::Auto(Pins {
            co_view_forward: Some(0.5),
            co_purchase_forward: Some(1.0),
            ..Pins::default()
        })
    );
    assert_eq!(parsed("").accounts[0].models.co_view_forward, 0.0);
    assert!(
        fails(&models("co_view_forward = 1.5"))
            .contains("accounts[0].models.co_view_forward: must be between 0 and 1, got 1.5")
    );
    assert!(
        fails(&models("co_purchase_forward = -1"))
            .contains("accounts[0].models.co_purchase_forward: must be between 0 and 1, got -1")
    );
    let config = parsed("tuning = \"off\"");
    assert_eq!(config.accounts[0].tuning, Tuning::Off);
    assert_eq!(config.accounts[0].settings().tuning, Tuning::Off);
    let config = parsed("tuning = \"auto\"");
    assert_eq!(config.accounts[0].tuning, Tuning::default());
    let config = parsed("tuning_trials_per_second = 500");
    assert_eq!(config.accounts[0].models.tuning_trials_per_second, 500);
    // Each key's bad value, and the error that names it.
    for (table, error) in [
        (
            "tuning_trials_per_second = 0",
            "accounts[0].models.tuning_trials_per_second: must be between 1 and 100000",
        ),
        (
            "co_view_window = 5",
            "accounts[0].models.co_view_window: must be 1, 3 or 10, got 5",
        ),
        (
            "co_purchase_window = 2",
            "accounts[0].models.co_purchase_window: must be 1, 3 or 10, got 2",
        ),
        (
            "purchase_partner_damping = 2",
            "accounts[0].models.purchase_partner_damping: must be between 0 and 1, got 2",
        ),
        (
            "tuning = \"sometimes\"",
            "accounts[0].models.tuning: must be \"auto\" or \"off\", got \"sometimes\"",
        ),
        (
            "partner_damping = 1.5",
            "accounts[0].models.partner_damping: must be between 0 and 1, got 1.5",
        ),
        (
            "seed_damping = -0.5",
            "accounts[0].models.seed_damping: must be between 0 and 1, got -0.5",
        ),
        ("seed_damping = nan", "accounts[0].models.seed_damping"),
        (
            "purchase_seed_damping = 2",
            "accounts[0].models.purchase_seed_damping: must be between 0 and 1, got 2",
        ),
        (
            "partners = 4",
            "accounts[0].models.partners: must be between 8 and 1024, got 4",
        ),
        (
            "neighbours = 300",
            "accounts[0].models.neighbours: must be between 1 and 256, got 300",
        ),
        ("window = 3", "unknown field `window`"),
    ] {
        assert!(fails(&models(table)).contains(error), "{table}");
    }
}
