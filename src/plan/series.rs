//! The data-set series of a plan: every profile (`--profile a,b`) at every scale
//! (`--scale 0.01,0.1`, or the scales `--files`/`--data` resolve to), profile by profile,
//! each scale in the order given. Every cell of the run runs once on each. A series of one
//! data set records no label (results read as they always did); a series of profiles only
//! labels each by its profile ("small", as before scales could vary); a series with several
//! scales labels each by its size ("2.5k files · 39.1 MiB", prefixed by the profile when
//! profiles vary too) — a label derived from the spec alone, so it reads back to the same
//! data set ([`Plan::dataset_index`]) and two scales of one size are refused by
//! [`check_distinct`].

use crate::dataset::{profile_name, sizing, DatasetSpec};

use super::settings::Settings;
use super::size::human_bytes;
use super::{Plan, PlanError};

impl Plan {
    /// Every data set of the plan: each profile (the first, then the further ones) at each
    /// scale (the first, then the further ones).
    pub fn datasets(&self) -> Vec<DatasetSpec> {
        let profiles = std::iter::once(self.dataset.profile).chain(self.extra_profiles.clone());
        let scales: Vec<f64> = self.scales();
        profiles
            .flat_map(|profile| {
                scales.iter().map(move |&scale| DatasetSpec {
                    profile,
                    scale,
                    ..self.dataset.clone()
                })
            })
            .collect()
    }

    /// The scales of the series: the data set's own, then the further ones.
    pub fn scales(&self) -> Vec<f64> {
        std::iter::once(self.dataset.scale)
            .chain(self.extra_scales.iter().copied())
            .collect()
    }

    /// Which of [`Plan::scales`] data set `i` of [`Plan::datasets`] is at.
    pub fn scale_index(&self, i: usize) -> usize {
        i % (1 + self.extra_scales.len())
    }

    /// How many data sets every cell runs on.
    pub fn dataset_count(&self) -> usize {
        (1 + self.extra_profiles.len()) * (1 + self.extra_scales.len())
    }

    /// The label records of data set `i` carry (see the module docs): none for a plan of
    /// one data set.
    pub fn dataset_label(&self, i: usize) -> Option<String> {
        if self.dataset_count() == 1 {
            return None;
        }
        let d = self.datasets().into_iter().nth(i)?;
        let profile = profile_name(d.profile);
        if self.extra_scales.is_empty() {
            return Some(profile.to_string());
        }
        let size = size_label(&d);
        Some(match self.extra_profiles.is_empty() {
            true => size,
            false => format!("{profile} · {size}"),
        })
    }

    /// The index of the data set a record's label names (`None`: the only one).
    pub fn dataset_index(&self, label: Option<&str>) -> Option<usize> {
        match label {
            None => (self.dataset_count() == 1).then_some(0),
            Some(l) => {
                (0..self.dataset_count()).find(|&i| self.dataset_label(i).as_deref() == Some(l))
            }
        }
    }

    /// The labels of the data sets of one profile, smallest scale first: the steps a
    /// verdict is checked across. One list per profile; empty when the plan has one scale.
    pub fn scale_steps(&self) -> Vec<Vec<String>> {
        if self.extra_scales.is_empty() {
            return Vec::new();
        }
        let per = 1 + self.extra_scales.len();
        let scales = self.scales();
        let mut order: Vec<usize> = (0..per).collect();
        order.sort_by(|&a, &b| scales[a].total_cmp(&scales[b]));
        (0..=self.extra_profiles.len())
            .map(|p| {
                order
                    .iter()
                    .filter_map(|&s| self.dataset_label(p * per + s))
                    .collect()
            })
            .collect()
    }
}

/// A data set's size as a reader takes it in: "2.5k files · 39.1 MiB" (expected bytes; the
/// file count is exact).
pub fn size_label(d: &DatasetSpec) -> String {
    let files = sizing::files(d).unwrap_or(0);
    let bytes = sizing::bytes(d).unwrap_or(0.0);
    format!(
        "{} files · {}",
        count_label(files),
        human_bytes(bytes as u64)
    )
}

/// A file count in a few characters: 25, 2.5k, 250k, 1.2M.
pub fn count_label(n: u64) -> String {
    let v = n as f64;
    let short = |x: f64, unit: &str| match x < 10.0 && (x * 10.0).round() % 10.0 != 0.0 {
        true => format!("{x:.1}{unit}"),
        false => format!("{x:.0}{unit}"),
    };
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => short(v / 1e3, "k"),
        _ => short(v / 1e6, "M"),
    }
}

/// Two data sets of the series with one label would be one point twice: refused, naming
/// the scales (e.g. `--profile huge --scale 1e-8,2e-8`, both at the profile's floors).
pub fn check_distinct(plan: &Plan) -> Result<(), PlanError> {
    let labels: Vec<Option<String>> = (0..plan.dataset_count())
        .map(|i| plan.dataset_label(i))
        .collect();
    for (i, l) in labels.iter().enumerate() {
        if let Some(j) = labels[..i].iter().position(|o| o == l) {
            let d = plan.datasets();
            return Err(PlanError::Invalid {
                what: "scale",
                value: format!("{},{}", d[j].scale, d[i].scale),
                why: format!(
                    "both make the same data set ({}); name scales that differ in size",
                    l.as_deref().unwrap_or("")
                ),
            });
        }
    }
    Ok(())
}

/// The scales of the series, from whichever of `scale`, `files` and `data` states the
/// size — the command line's statement over the file's, since a flag wins — applied to
/// `dataset` (its first scale, and `file_size`); returns the further scales. Two
/// statements in one place, or a stated size with several profiles or a directory of
/// one's own, are refused on one line.
pub fn resolve_scales(
    f: &Settings,
    o: &Settings,
    dataset: &mut DatasetSpec,
    several_profiles: bool,
) -> Result<Vec<f64>, PlanError> {
    dataset.file_size = o.file_size.or(f.file_size).map(|s| s.0);
    let stated = |s: &Settings| s.scale.is_some() || s.files.is_some() || s.data.is_some();
    let from = if stated(o) { o } else { f };
    let mut given = Vec::new();
    if let Some(v) = &from.scale {
        given.push(("scale", v.0.iter().map(f64::to_string).collect::<Vec<_>>()));
    }
    if let Some(v) = &from.files {
        given.push(("files", v.0.iter().map(u64::to_string).collect()));
    }
    if let Some(v) = &from.data {
        given.push(("data", v.0.iter().map(|b| human_bytes(*b)).collect()));
    }
    let refuse = |what: &'static str, value: &[String], why: String| PlanError::Invalid {
        what,
        value: value.join(","),
        why,
    };
    if let [(what, value), (other, _), ..] = given.as_slice() {
        let why = format!(
            "--{other} also states the data set's size: give one of --scale, --files and --data"
        );
        return Err(refuse(what, value, why));
    }
    let scales = match (&from.scale, &from.files, &from.data) {
        (Some(s), ..) => s.0.clone(),
        (None, None, None) => vec![super::DEFAULT_SCALE],
        (None, files, data) => {
            let (what, value) = &given[0];
            if several_profiles || dataset.source_dir.is_some() {
                let why = "a stated size applies to one generated profile: name one profile (and no --dataset dir:)".to_string();
                return Err(refuse(what, value, why));
            }
            let solved = match (files, data) {
                (Some(n), _) => {
                    n.0.iter()
                        .map(|&n| sizing::scale_for_files(dataset, n))
                        .collect()
                }
                (_, Some(b)) => {
                    b.0.iter()
                        .map(|&b| sizing::scale_for_bytes(dataset, b))
                        .collect()
                }
                _ => Ok(Vec::new()),
            };
            solved.map_err(|e| refuse(what, value, e.to_string()))?
        }
    };
    if scales.len() > 1 && dataset.source_dir.is_some() {
        let why = "a data set from your own directory has one size: name one scale".to_string();
        return Err(refuse("scale", &given[0].1, why));
    }
    dataset.scale = scales[0];
    Ok(scales[1..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Profile;

    fn plan(profiles: &[Profile], scales: &[f64]) -> Plan {
        let mut p = Plan::of(Vec::new(), &["create"], DatasetSpec::default());
        p.dataset.profile = profiles[0];
        p.extra_profiles = profiles[1..].to_vec();
        p.dataset.scale = scales[0];
        p.extra_scales = scales[1..].to_vec();
        p
    }

    #[test]
    fn series_labels_read_back_and_a_profile_series_keeps_its_names() {
        let one = plan(&[Profile::Small], &[0.01]);
        assert_eq!(one.dataset_label(0), None);
        assert_eq!(one.dataset_index(None), Some(0));
        let profiles = plan(&[Profile::Small, Profile::Large], &[0.01]);
        assert_eq!(profiles.dataset_label(1).as_deref(), Some("large"));
        assert_eq!(profiles.dataset_index(Some("small")), Some(0));
        let scales = plan(&[Profile::Small], &[0.1, 0.01]);
        assert_eq!(
            scales.dataset_label(1).as_deref(),
            Some("2.5k files · 39.1 MiB")
        );
        assert_eq!(
            scales.dataset_label(0).as_deref(),
            Some("25k files · 390.6 MiB")
        );
        assert_eq!(scales.scale_steps()[0][0], "2.5k files · 39.1 MiB");
        let both = plan(&[Profile::Small, Profile::Medium], &[0.01, 0.1]);
        assert_eq!(both.dataset_count(), 4);
        for i in 0..4 {
            let l = both.dataset_label(i).unwrap();
            assert_eq!(both.dataset_index(Some(&l)), Some(i), "{l}");
        }
        assert!(both.dataset_label(2).unwrap().starts_with("medium · "));
        assert_eq!(both.scale_steps().len(), 2);
    }

    #[test]
    fn counts_read_short() {
        for (n, s) in [
            (25, "25"),
            (2_500, "2.5k"),
            (20_000, "20k"),
            (250_000, "250k"),
        ] {
            assert_eq!(count_label(n), s);
        }
        assert_eq!(count_label(1_200_000), "1.2M");
    }

    #[test]
    fn two_scales_of_one_size_are_refused() {
        assert!(check_distinct(&plan(&[Profile::Huge], &[1e-8, 2e-8])).is_err());
        assert!(check_distinct(&plan(&[Profile::Small], &[0.001, 0.01])).is_ok());
    }
}
