//! The square matrices and counts the dense methods share.

/// A products × products matrix of `f32`, row-major.
pub(super) struct Square {
    pub(super) n: usize,
    pub(super) cells: Vec<f32>,
}

impl Square {
    pub(super) fn zeros(n: usize) -> Square {
        Square {
            n,
            cells: vec![0.0; n * n],
        }
    }

    pub(super) fn row(&self, i: u32) -> &[f32] {
        let start = i as usize * self.n;
        &self.cells[start..start + self.n]
    }

    pub(super) fn add(&mut self, i: u32, j: u32, value: f32) {
        self.cells[i as usize * self.n + j as usize] += value;
    }
}

pub(super) fn add_row(scores: &mut [f32], row: &[f32], weight: f32) {
    for (s, r) in scores.iter_mut().zip(row) {
        *s += weight * r;
    }
}

/// Adds the rows of `matrix` of each distinct product of `history`.
pub(super) fn add_rows_of(matrix: &Square, history: &[u32], scores: &mut [f32]) {
    let mut seen: Vec<u32> = history.to_vec();
    seen.sort_unstable();
    seen.dedup();
    for i in seen {
        add_row(scores, matrix.row(i), 1.0);
    }
}

/// How many visitors interacted with each product.
pub(super) fn counts(distinct: &[Vec<u32>], items: usize) -> Vec<f32> {
    let mut counts = vec![0.0f32; items];
    for items in distinct {
        for &i in items {
            counts[i as usize] += 1.0;
        }
    }
    counts
}

/// Visitors who interacted with both products, for every pair.
pub(super) fn co_counts(distinct: &[Vec<u32>], items: usize) -> Square {
    let mut co = Square::zeros(items);
    for list in distinct {
        for (x, &i) in list.iter().enumerate() {
            for &j in &list[x + 1..] {
                co.add(i, j, 1.0);
                co.add(j, i, 1.0);
            }
        }
    }
    co
}
