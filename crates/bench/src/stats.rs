//! Figures and their summaries: every figure is reported as min, median, p99 and max over its
//! samples (one sample per chat, per time window or per reading, as the figure says).

use serde::Serialize;

/// Min, median, p99 and max of a set of samples (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// `None` for no samples; NaNs are dropped first.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            n: sorted.len(),
            min: sorted[0],
            median: percentile(&sorted, 0.50),
            p99: percentile(&sorted, 0.99),
            max: sorted[sorted.len() - 1],
        })
    }
}

/// The nearest-rank percentile of sorted, non-empty samples: the smallest sample that at least
/// `p` of the samples do not exceed.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One line of the table and one object of results.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// The section it belongs to (`time to pause`, `footprint`, ...).
    pub group: String,
    pub name: String,
    pub unit: String,
    /// `None` when the figure could not be measured (see `note`).
    #[serde(flatten)]
    pub summary: Option<Summary>,
    /// What the reader needs to read the figure right, or why it is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Figure {
    pub fn samples(group: &str, name: &str, unit: &str, samples: &[f64]) -> Figure {
        Figure {
            group: group.to_owned(),
            name: name.to_owned(),
            unit: unit.to_owned(),
            summary: Summary::of(samples),
            note: None,
        }
    }

    /// A figure measured once.
    pub fn value(group: &str, name: &str, unit: &str, value: f64) -> Figure {
        Figure::samples(group, name, unit, &[value])
    }

    /// A figure that could not be measured, and why.
    pub fn missing(group: &str, name: &str, unit: &str, why: impl Into<String>) -> Figure {
        Figure {
            group: group.to_owned(),
            name: name.to_owned(),
            unit: unit.to_owned(),
            summary: None,
            note: Some(why.into()),
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Figure {
        self.note = Some(note.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_uses_nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        let summary = Summary::of(&samples);
        assert_eq!(
            summary,
            Some(Summary {
                n: 200,
                min: 1.0,
                median: 100.0,
                p99: 198.0,
                max: 200.0
            })
        );
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[f64::NAN]), None);
        let one = Summary::of(&[7.0]);
        assert_eq!(one.map(|s| (s.median, s.p99)), Some((7.0, 7.0)));
    }
}
