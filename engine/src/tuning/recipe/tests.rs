use super::*;
use crate::testing;

fn personalized() -> ZoneSpec {
    testing::zone("P", Strategy::Personalized, 10)
}

#[test]
fn the_grid_crosses_the_values_not_pinned_the_configured_recipe_first() {
    let spec = personalized();
    let grid = recipe_grid(&spec);
    assert_eq!(grid[0], Recipe::of(&spec));
    // Histories 1, 3 and the configured 10; long-term 0 and 2; popularity 0 and 0.1;
    // purchases 0 and 0.25; the sessions 0 (as configured) and 1.
    assert_eq!(grid.len(), 3 * 2 * 2 * 2 * 2);
    assert!(grid.iter().any(|r| r.sessions == 1.0));
    assert!(grid.contains(&Recipe {
        history: 1,
        long_term: 0.0,
        sessions: 0.0,
        popularity: 0.1,
        purchases: 0.0,
    }));
    // A zone that blends sessions has them compared with none (and 1, if other).
    let mut blending = personalized();
    blending.recipe.sessions = 1.0;
    assert_eq!(recipe_grid(&blending).len(), 3 * 2 * 2 * 2 * 2);
    // Pinned values stay as configured.
    let mut pinned = personalized();
    pinned.recipe.history = 5;
    pinned.recipe.pinned = RecipePins {
        history: true,
        sessions: true,
        ..RecipePins::default()
    };
    let grid = recipe_grid(&pinned);
    assert_eq!(grid.len(), 2 * 2 * 2);
    assert!(grid.iter().all(|r| r.history == 5 && r.sessions == 0.0));
    let mut all = personalized();
    all.recipe.pinned = RecipePins {
        history: true,
        long_term: true,
        sessions: true,
        popularity: true,
        purchases: true,
    };
    assert_eq!(recipe_grid(&all), [Recipe::of(&all)]);
}

#[test]
fn a_recipe_fills_the_personalized_zones_but_what_each_pins() {
    let recipe = Recipe {
        history: 1,
        long_term: 0.0,
        sessions: 1.0,
        popularity: 0.5,
        purchases: 0.0,
    };
    let mut pinned = ZoneSpec {
        id: "Q".into(),
        ..personalized()
    };
    pinned.recipe.long_term = 4.0;
    pinned.recipe.pinned = RecipePins {
        long_term: true,
        ..RecipePins::default()
    };
    let trending = testing::zone("T", Strategy::Trending, 10);
    let zones = with_recipe(&[personalized(), pinned, trending.clone()], recipe);
    assert_eq!(Recipe::of(&zones[0]), recipe);
    assert_eq!(
        Recipe::of(&zones[1]),
        Recipe {
            long_term: 4.0,
            ..recipe
        }
    );
    assert_eq!(zones[2], trending);
}

#[test]
fn the_tuner_tries_the_first_personalized_zone_and_keeps_its_recipe_through_a_reload() {
    let zones = [testing::zone("T", Strategy::Trending, 10), personalized()];
    let tuner = RecipeTuner::new(&zones, Runs::Yes, 5);
    let (zone, grid) = tuner.due(1_000).expect("a trial is due");
    assert_eq!(zone.id, "P");
    assert_eq!(grid.len(), 48);
    // Bounded: a second's worth at once.
    assert_eq!((0..10).filter(|_| tuner.due(1_000).is_some()).count(), 4);
    let chosen = grid[5];
    assert!(tuner.restore(chosen));
    tuner.reconfigure(&zones, Runs::Yes, 5);
    assert_eq!(tuner.active(), Some(chosen));
    // Off: nothing tried, nothing applied.
    tuner.reconfigure(&zones, Runs::No, 5);
    assert_eq!(tuner.active(), None);
    assert!(tuner.due(10_000).is_none());
    // No personalized zone: nothing to tune.
    let none = RecipeTuner::new(&zones[..1], Runs::Yes, 5);
    assert!(none.due(1_000).is_none());
    assert_eq!(none.report().zone, None);
}
