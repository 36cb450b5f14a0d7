//! Each method on small data, and the tuning grids.

use super::*;
use vitrine_engine::models::SEED_DAMPING;

fn training(sequences: Vec<Vec<u32>>, items: usize) -> Training {
    Training::new(sequences, items, 1)
}

fn top(method: &Method, t: &Training, visitor: u32, history: &[u32]) -> u32 {
    let fitted = method.fit(t).unwrap();
    let mut scores = vec![0.0; t.items];
    fitted.score(visitor, history, &mut scores);
    for &h in history {
        scores[h as usize] = f32::NEG_INFINITY;
    }
    (0..t.items as u32)
        .max_by(|a, b| scores[*a as usize].total_cmp(&scores[*b as usize]))
        .unwrap()
}

/// Two clusters {0,1,2} and {3,4,5}, each browsed in order by many visitors; product
/// 5 the most popular overall.
fn clustered() -> Training {
    let mut sequences = Vec::new();
    for _ in 0..20 {
        sequences.push(vec![0, 1, 2]);
    }
    for _ in 0..30 {
        sequences.push(vec![3, 4, 5]);
    }
    sequences.push(vec![5]);
    training(sequences, 6)
}

#[test]
fn every_method_but_popularity_follows_the_cluster() {
    let t = clustered();
    assert_eq!(top(&Method::MostPopular, &t, 99, &[0]), 5);
    for group in Method::grid() {
        let method = &group[0];
        if *method == Method::MostPopular {
            continue;
        }
        let next = top(method, &t, 99, &[0, 1]);
        assert_eq!(next, 2, "{}", method.name());
    }
}

#[test]
fn sequence_methods_know_what_comes_next() {
    let t = clustered();
    for method in [
        Method::Markov,
        Method::SequentialRules {
            window: 1,
            symmetric: false,
            steps: 1,
        },
    ] {
        assert_eq!(top(&method, &t, 99, &[3]), 4, "{}", method.name());
    }
}

#[test]
fn session_knn_leaves_the_visitor_out() {
    // Visitor 0 alone holds 7 next to 6: it must not recommend 7 to itself.
    let t = training(vec![vec![6, 7], vec![6, 8], vec![6, 8]], 9);
    assert_eq!(
        top(
            &Method::Vsknn {
                neighbours: 10,
                steps: 5
            },
            &t,
            0,
            &[6]
        ),
        8
    );
}

#[test]
fn the_exact_co_view_model_weighs_pairs_as_the_zones_lists_do() {
    // One visitor viewed 0, 1, 2: pairs (0,1) and (1,2) count 1, (0,2) 1/2; the
    // totals are 1.5, 2 and 1.5; a pair weighs its count / both totals^0.5.
    let t = training(vec![vec![0, 1, 2]], 3);
    let exact = Method::CoViewExact {
        window: CO_VIEW_WINDOW,
        backward: 1.0,
        recency: 0.5,
        long_term: 0.0,
        damping: PARTNER_DAMPING,
    };
    let fitted = exact.fit(&t).unwrap();
    let mut scores = vec![0.0; 3];
    fitted.score(0, &[0], &mut scores);
    let pair = |count: f32, a: f32, b: f32| count / a.sqrt() / b.sqrt();
    assert!((scores[1] - pair(1.0, 1.5, 2.0)).abs() < 1e-6, "{scores:?}");
    assert!((scores[2] - pair(0.5, 1.5, 1.5)).abs() < 1e-6, "{scores:?}");
    // An older step weighs `recency` times the one after it.
    let mut scores = vec![0.0; 3];
    fitted.score(0, &[1, 0], &mut scores);
    let expected = pair(0.5, 1.5, 1.5) + 0.5 * pair(1.0, 2.0, 1.5);
    assert!((scores[2] - expected).abs() < 1e-6, "{scores:?}");
    assert!(exact.is_reference());
    assert!(
        Method::grid()
            .iter()
            .flatten()
            .filter(|m| m.is_reference())
            .all(|m| {
                [
                    "co_view_exact",
                    "co_view_ease",
                    "local_ease",
                    "co_view_local_ease",
                ]
                .contains(&m.name())
            })
    );
}

#[test]
fn the_exact_co_view_models_window_and_backward_weight_shape_its_pairs() {
    // One visitor viewed 0, 1, 2. A window of 1 pairs neighbours only: nothing
    // pairs 0 with 2. Read against the order they were viewed in, pairs weigh
    // `backward` times their count: from 1, the product after it (2) counts 1 and
    // the one before it (0) a half.
    let t = training(vec![vec![0, 1, 2]], 3);
    let counts = SequentialRules::count(&t, 1, 0.5);
    assert_eq!(counts.row(0), [0.0, 1.0, 0.0]);
    assert_eq!(counts.row(1), [0.5, 0.0, 1.0]);
    assert_eq!(counts.row(2), [0.0, 0.5, 0.0]);
    let counts = SequentialRules::count(&t, 2, 0.0);
    assert_eq!(counts.row(0), [0.0, 1.0, 0.5]);
    assert_eq!(counts.row(2), [0.0, 0.0, 0.0]);
    // The grid compares the server's choices (window 10, both ways alike) with
    // others, each at the zone's defaults.
    let references: Vec<Method> = Method::grid()
        .into_iter()
        .flatten()
        .filter(Method::is_reference)
        .collect();
    for (window, backward) in [
        (CO_VIEW_WINDOW, 1.0),
        (5, 1.0),
        (30, 1.0),
        (CO_VIEW_WINDOW, 0.0),
    ] {
        assert!(
            references.contains(&Method::CoViewExact {
                window,
                backward,
                recency: DEFAULT_RECENCY as f32,
                long_term: DEFAULT_LONG_TERM as f32,
                damping: PARTNER_DAMPING,
            }),
            "{window} {backward}"
        );
    }
    // And undamped partners, as self-tuning may choose.
    assert!(references.contains(&Method::CoViewExact {
        window: CO_VIEW_WINDOW,
        backward: 1.0,
        recency: DEFAULT_RECENCY as f32,
        long_term: DEFAULT_LONG_TERM as f32,
        damping: 0.0,
    }));
}

#[test]
fn the_exact_co_view_models_partner_damping_divides_by_the_partners_total() {
    // 0, 1, 2 as above: from 0, partner 1 (total 2) counts 1 and partner 2 (total 1.5)
    // a half. Undamped, only the seed's own total (1.5) divides them.
    let t = training(vec![vec![0, 1, 2]], 3);
    let scores = |damping: f32| {
        let exact = Method::CoViewExact {
            window: CO_VIEW_WINDOW,
            backward: 1.0,
            recency: 0.5,
            long_term: 0.0,
            damping,
        };
        let mut scores = vec![0.0; 3];
        exact.fit(&t).unwrap().score(0, &[0], &mut scores);
        scores
    };
    let seed = 1.5f32.powf(-SEED_DAMPING);
    let undamped = scores(0.0);
    assert!((undamped[1] - seed).abs() < 1e-6, "{undamped:?}");
    assert!((undamped[2] - 0.5 * seed).abs() < 1e-6, "{undamped:?}");
    let damped = scores(0.25);
    assert!(
        (damped[1] - seed * 2f32.powf(-0.25)).abs() < 1e-6,
        "{damped:?}"
    );
    assert!(
        (damped[2] - 0.5 * seed * 1.5f32.powf(-0.25)).abs() < 1e-6,
        "{damped:?}"
    );
}

#[test]
fn the_ease_blend_adds_eases_scores_at_its_weight_to_the_co_view_models() {
    let t = clustered();
    let history = [0, 1];
    let scaled = |method: Method| {
        let mut scores = vec![0.0; t.items];
        method.fit(&t).unwrap().score(0, &history, &mut scores);
        let most = scores.iter().copied().fold(0.0f32, f32::max);
        scores.iter().map(|s| s / most).collect::<Vec<f32>>()
    };
    let co_view = scaled(Method::CoViewExact {
        window: CO_VIEW_WINDOW,
        backward: 1.0,
        recency: DEFAULT_RECENCY as f32,
        long_term: DEFAULT_LONG_TERM as f32,
        damping: PARTNER_DAMPING,
    });
    let ease = scaled(Method::Ease { lambda: 1.0 });
    let blend = Method::CoViewEase {
        lambda: 1.0,
        weight: 0.5,
    };
    assert!(blend.is_reference());
    let mut scores = vec![0.0; t.items];
    blend.fit(&t).unwrap().score(0, &history, &mut scores);
    for (i, score) in scores.iter().enumerate() {
        let expected = co_view[i] + 0.5 * ease[i];
        assert!((score - expected).abs() < 1e-5, "{i}: {scores:?}");
    }
}

#[test]
fn ease_is_fitted_once_per_lambda_for_the_methods_of_one_training() {
    let t = clustered();
    let first = t.ease(1.0).unwrap();
    assert!(Arc::ptr_eq(&first, &t.ease(1.0).unwrap()));
    assert!(!Arc::ptr_eq(&first, &t.ease(2.0).unwrap()));
}

#[test]
fn the_ease_blends_of_one_training_share_one_co_view_fit() {
    let t = clustered();
    assert!(Arc::ptr_eq(&t.server_co_view(), &t.server_co_view()));
}

#[test]
fn dense_methods_refuse_catalogues_beyond_their_bound() {
    let t = training(vec![vec![0]], MAX_DENSE_ITEMS + 1);
    let error = Method::Markov.fit(&t).err().unwrap().to_string();
    assert!(error.contains("dense"), "{error}");
    let t = training(vec![vec![0]], MAX_INVERTED_ITEMS + 1);
    let error = Method::Ease { lambda: 1.0 }
        .fit(&t)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("inverted"), "{error}");
}

/// Scores of `method` fitted on `t` for `history`.
fn scores_of(method: &Method, t: &Training, history: &[u32]) -> Vec<f32> {
    let mut scores = vec![0.0; t.items];
    method.fit(t).unwrap().score(0, history, &mut scores);
    scores
}

#[test]
fn local_ease_with_every_partner_is_ease() {
    // Every pair of the four products seen together at least once, so no product's
    // partners leave any other out.
    let t = training(
        vec![
            vec![0, 1, 2, 3],
            vec![0, 1],
            vec![1, 2],
            vec![2, 3],
            vec![0, 2],
            vec![1, 3],
            vec![3],
        ],
        4,
    );
    let local = Method::LocalEase {
        lambda: 2.0,
        partners: 3,
    };
    assert!(local.is_reference());
    let ease = scores_of(&Method::Ease { lambda: 2.0 }, &t, &[0, 1]);
    let bounded = scores_of(&local, &t, &[0, 1]);
    for (i, (e, b)) in ease.iter().zip(&bounded).enumerate() {
        assert!((e - b).abs() < 1e-5, "{i}: {ease:?} against {bounded:?}");
    }
}

#[test]
fn local_ease_weighs_a_product_only_from_its_strongest_partners() {
    // Product 2 is seen with 0 by three visitors and with 1 by one: with one partner,
    // its weight comes from 0 alone, so a history of 1 gives it nothing.
    let t = training(vec![vec![0, 2], vec![0, 2], vec![0, 2], vec![1, 2]], 3);
    let one = Method::LocalEase {
        lambda: 1.0,
        partners: 1,
    };
    assert_eq!(scores_of(&one, &t, &[1])[2], 0.0);
    assert!(scores_of(&one, &t, &[0])[2] > 0.0);
    let both = Method::LocalEase {
        lambda: 1.0,
        partners: 2,
    };
    assert!(scores_of(&both, &t, &[1])[2] > 0.0);
}

#[test]
fn local_ease_is_fitted_once_per_setting_for_the_methods_of_one_training() {
    let t = clustered();
    let first = t.local_ease(1.0, 100);
    assert!(Arc::ptr_eq(&first, &t.local_ease(1.0, 100)));
    assert!(!Arc::ptr_eq(&first, &t.local_ease(1.0, 256)));
}
