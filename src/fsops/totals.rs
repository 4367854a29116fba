//! Per-worker totals that add up. Parallel work counts into one value per worker (no
//! locking, no atomics in the hot path) and the values are summed once at the end; this
//! trait is that sum, written once instead of field by field at every call site.

/// A worker's totals (counters, latency samples, lists) that combine by addition.
pub trait Totals: Default {
    /// Adds `other` into `self`: counters summed, samples and lists appended in order.
    fn add(&mut self, other: Self);

    /// The sum of all `parts`, in order (the default value if there are none).
    fn sum_all(parts: impl IntoIterator<Item = Self>) -> Self {
        parts.into_iter().fold(Self::default(), |mut acc, p| {
            acc.add(p);
            acc
        })
    }
}

impl Totals for u64 {
    fn add(&mut self, other: u64) {
        *self += other;
    }
}

impl<A: Totals, B: Totals> Totals for (A, B) {
    fn add(&mut self, other: (A, B)) {
        self.0.add(other.0);
        self.1.add(other.1);
    }
}

impl<T> Totals for Vec<T> {
    fn add(&mut self, other: Vec<T>) {
        self.extend(other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq)]
    struct Counts {
        files: u64,
        names: Vec<&'static str>,
    }

    impl Totals for Counts {
        fn add(&mut self, o: Counts) {
            self.files.add(o.files);
            self.names.add(o.names);
        }
    }

    #[test]
    fn sum_all_adds_counters_and_appends_lists_in_order() {
        let parts = vec![
            Counts {
                files: 2,
                names: vec!["a"],
            },
            Counts {
                files: 3,
                names: vec!["b", "c"],
            },
        ];
        assert_eq!(
            Counts::sum_all(parts),
            Counts {
                files: 5,
                names: vec!["a", "b", "c"],
            }
        );
        assert_eq!(u64::sum_all(Vec::new()), 0);
    }
}
