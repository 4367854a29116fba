//! Reading fio's `--output-format=json+`: the numbers fsarena reports come from here.
//!
//! Latency percentiles are computed from fio's `json+` histogram bins, with fio's own rule,
//! so a mixed read/write job gets one honest distribution over both directions instead of an
//! average of two percentiles (which would be meaningless). The parser must never panic on
//! what fio prints: stray `note:`/`fio:` lines, a truncated report, or no report at all.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Completion-latency statistics of one direction, in nanoseconds (fio's `clat_ns`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatStats {
    pub samples: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// fio's own percentiles, keyed by the percentage (50.0, 99.9, …).
    pub percentiles: Vec<(f64, u64)>,
    /// The `json+` histogram: (bucket value in ns, count), sorted by value.
    pub bins: Vec<(u64, u64)>,
}

/// One direction (read or write) of a job group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    pub bw_bytes: u64,
    pub iops: f64,
    pub runtime_ms: u64,
    pub total_ios: u64,
    pub clat: LatStats,
}

/// What fio reported, summed over the job groups in its output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FioReport {
    pub fio_version: String,
    /// fio's error code (an errno); 0 when every I/O succeeded.
    pub error: i32,
    pub read: DirStats,
    pub write: DirStats,
    /// User CPU of fio's jobs, percent of one CPU, averaged over job groups.
    pub usr_cpu_pct: f64,
    pub sys_cpu_pct: f64,
    /// Number of job entries fio reported (1 with `--group_reporting`).
    pub job_entries: usize,
}

impl FioReport {
    /// The measured time: the longer of the two directions' runtimes (fio excludes ramp time).
    pub fn runtime_s(&self) -> f64 {
        self.read.runtime_ms.max(self.write.runtime_ms) as f64 / 1000.0
    }

    pub fn iops(&self) -> f64 {
        self.read.iops + self.write.iops
    }

    pub fn bw_bytes(&self) -> u64 {
        self.read.bw_bytes + self.write.bw_bytes
    }

    pub fn total_ios(&self) -> u64 {
        self.read.total_ios + self.write.total_ios
    }

    /// Mean completion latency over both directions, weighted by their sample counts.
    pub fn clat_mean_ns(&self) -> Option<f64> {
        let n = self.read.clat.samples + self.write.clat.samples;
        (n > 0).then(|| {
            (self.read.clat.mean_ns * self.read.clat.samples as f64
                + self.write.clat.mean_ns * self.write.clat.samples as f64)
                / n as f64
        })
    }

    /// A completion-latency percentile over both directions, from the merged `json+` bins.
    /// Without bins (plain `json`), falls back to fio's own percentile of the single
    /// direction that did I/O; with two directions and no bins there is no honest answer.
    pub fn clat_percentile_ns(&self, pct: f64) -> Option<u64> {
        let dirs: Vec<&LatStats> = [&self.read.clat, &self.write.clat]
            .into_iter()
            .filter(|l| l.samples > 0)
            .collect();
        if dirs.is_empty() {
            return None;
        }
        if dirs.iter().all(|l| !l.bins.is_empty()) {
            let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
            for l in &dirs {
                for &(v, c) in &l.bins {
                    *merged.entry(v).or_default() += c;
                }
            }
            let bins: Vec<(u64, u64)> = merged.into_iter().collect();
            return percentile_from_bins(&bins, pct);
        }
        match dirs.as_slice() {
            [only] => only
                .percentiles
                .iter()
                .find(|(p, _)| (p - pct).abs() < 1e-6)
                .map(|&(_, v)| v),
            _ => None,
        }
    }
}

/// fio's percentile rule (stat.c, `calc_clat_percentiles`): the value of the first bucket
/// at which the running count reaches `pct`% of all samples.
pub fn percentile_from_bins(bins: &[(u64, u64)], pct: f64) -> Option<u64> {
    let total: u64 = bins.iter().map(|&(_, c)| c).sum();
    if total == 0 {
        return None;
    }
    let threshold = pct / 100.0 * total as f64;
    let mut sum = 0u64;
    for &(v, c) in bins {
        sum += c;
        if sum as f64 >= threshold {
            return Some(v);
        }
    }
    bins.last().map(|&(v, _)| v)
}

/// Why fio's output could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("no fio JSON object found in fio's output ({0} bytes)")]
    NoJson(usize),
    #[error("fio JSON has no jobs")]
    NoJobs,
    #[error("fio JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Finds and parses the JSON report in fio's stdout.
///
/// fio prints `note: …` and `fio: …` lines on stdout before the JSON (e.g. "queue depth will
/// be capped at 1"), so the report is the first `{` — preferring one at a line start — from
/// which a complete JSON object with a `jobs` array parses. Anything after it is ignored.
pub fn parse_output(stdout: &[u8]) -> Result<FioReport, ParseError> {
    find_json::<RawOutput>(stdout)?.into_report()
}

/// The first JSON object in `stdout` that parses as `T` (see [`parse_output`]).
fn find_json<T: serde::de::DeserializeOwned>(stdout: &[u8]) -> Result<T, ParseError> {
    let line_starts =
        (0..stdout.len()).filter(|&i| stdout[i] == b'{' && (i == 0 || stdout[i - 1] == b'\n'));
    let anywhere = (0..stdout.len()).filter(|&i| stdout[i] == b'{');
    let mut last_err = None;
    for start in line_starts.chain(anywhere) {
        let mut stream = serde_json::Deserializer::from_slice(&stdout[start..]).into_iter::<T>();
        match stream.next() {
            Some(Ok(raw)) => return Ok(raw),
            Some(Err(e)) => last_err = Some(e),
            None => {}
        }
    }
    match last_err {
        Some(e) if stdout.contains(&b'{') => Err(ParseError::Json(e)),
        _ => Err(ParseError::NoJson(stdout.len())),
    }
}

/// One host's figures in fio's client mode, as fio names it (the address it was given).
#[derive(Debug, Clone, PartialEq)]
pub struct HostReport {
    pub hostname: String,
    pub port: u16,
    pub report: FioReport,
}

/// What fio's client mode reported: each host's figures and the consolidated one.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientReport {
    pub fio_version: String,
    /// One entry per server, in fio's order.
    pub hosts: Vec<HostReport>,
    /// fio's own "All clients" sum (with one host, that host's figures, since fio prints
    /// no sum then). fio does not print histogram bins for it, so its `clat.bins` are the
    /// hosts' bins merged here, which is what its percentiles are computed from.
    pub all: FioReport,
    /// Whether `all` is fio's "All clients" entry (false with one host).
    pub fio_sum: bool,
}

/// The name fio gives its sum over clients in `client_stats`.
const ALL_CLIENTS: &str = "All clients";

/// Parses `--output-format=json+` of `fio --client=…`: the `client_stats` array, whose
/// entries carry `hostname` and `port`, with fio's "All clients" entry when several hosts ran.
pub fn parse_client_output(stdout: &[u8]) -> Result<ClientReport, ParseError> {
    let raw = find_json::<RawClientOutput>(stdout)?;
    let mut hosts: Vec<(String, u16, Vec<RawJob>)> = Vec::new();
    let mut sum = Vec::new();
    for job in raw.client_stats {
        if job.jobname == ALL_CLIENTS {
            sum.push(job);
            continue;
        }
        match hosts
            .iter_mut()
            .find(|(h, p, _)| *h == job.hostname && *p == job.port)
        {
            Some((_, _, jobs)) => jobs.push(job),
            None => hosts.push((job.hostname.clone(), job.port, vec![job])),
        }
    }
    let mut reports = Vec::new();
    for (hostname, port, jobs) in hosts {
        let report = RawOutput {
            version: raw.version.clone(),
            jobs,
        }
        .into_report()?;
        reports.push(HostReport {
            hostname,
            port,
            report,
        });
    }
    let fio_sum = !sum.is_empty();
    let mut all = match (sum.is_empty(), reports.as_slice()) {
        (false, _) => RawOutput {
            version: raw.version.clone(),
            jobs: sum,
        }
        .into_report()?,
        (true, [only]) => only.report.clone(),
        (true, _) => return Err(ParseError::NoJobs),
    };
    for (dir, pick) in [
        (
            &mut all.read,
            (|r: &FioReport| &r.read) as fn(&FioReport) -> &DirStats,
        ),
        (&mut all.write, |r: &FioReport| &r.write),
    ] {
        let mut merged: BTreeMap<u64, u64> = BTreeMap::new();
        for h in &reports {
            for &(v, c) in &pick(&h.report).clat.bins {
                *merged.entry(v).or_default() += c;
            }
        }
        dir.clat.bins = merged.into_iter().collect();
        if reports.len() > 1 {
            // fio's percentiles of a sum are not kept: the merged bins give them.
            dir.clat.percentiles.clear();
        }
    }
    Ok(ClientReport {
        fio_version: raw.version,
        hosts: reports,
        all,
        fio_sum,
    })
}

#[derive(Deserialize)]
struct RawClientOutput {
    #[serde(rename = "fio version", default)]
    version: String,
    client_stats: Vec<RawJob>,
}

#[derive(Deserialize)]
struct RawOutput {
    #[serde(rename = "fio version", default)]
    version: String,
    jobs: Vec<RawJob>,
}

#[derive(Deserialize)]
struct RawJob {
    /// Client mode only: the job's name ("All clients" for fio's sum), the server's
    /// address as the client was given it, and its port.
    #[serde(default)]
    jobname: String,
    #[serde(default)]
    hostname: String,
    #[serde(default)]
    port: u16,
    #[serde(default)]
    error: i32,
    #[serde(default)]
    read: RawDir,
    #[serde(default)]
    write: RawDir,
    #[serde(default)]
    usr_cpu: f64,
    #[serde(default)]
    sys_cpu: f64,
}

#[derive(Deserialize, Default)]
struct RawDir {
    #[serde(default)]
    io_bytes: u64,
    #[serde(default)]
    bw_bytes: u64,
    #[serde(default)]
    iops: f64,
    #[serde(default)]
    runtime: u64,
    #[serde(default)]
    total_ios: u64,
    #[serde(default)]
    clat_ns: RawLat,
}

#[derive(Deserialize, Default)]
struct RawLat {
    #[serde(rename = "N", default)]
    n: u64,
    #[serde(default)]
    mean: f64,
    #[serde(default)]
    min: u64,
    #[serde(default)]
    max: u64,
    #[serde(default)]
    percentile: BTreeMap<String, u64>,
    #[serde(default)]
    bins: BTreeMap<String, u64>,
}

impl RawOutput {
    fn into_report(self) -> Result<FioReport, ParseError> {
        if self.jobs.is_empty() {
            return Err(ParseError::NoJobs);
        }
        let n = self.jobs.len();
        let mut r = FioReport {
            fio_version: self.version,
            job_entries: n,
            ..FioReport::default()
        };
        for job in self.jobs {
            if r.error == 0 {
                r.error = job.error;
            }
            r.usr_cpu_pct += job.usr_cpu / n as f64;
            r.sys_cpu_pct += job.sys_cpu / n as f64;
            add_dir(&mut r.read, job.read);
            add_dir(&mut r.write, job.write);
        }
        Ok(r)
    }
}

/// Adds one job entry's direction into the running sum (several entries only appear
/// without `--group_reporting`; they ran concurrently, so runtimes take the maximum).
fn add_dir(into: &mut DirStats, raw: RawDir) {
    let lat = raw.clat_ns;
    let n_old = into.clat.samples;
    let n_new = n_old + lat.n;
    if n_new > 0 {
        into.clat.mean_ns =
            (into.clat.mean_ns * n_old as f64 + lat.mean * lat.n as f64) / n_new as f64;
    }
    if lat.n > 0 {
        into.clat.min_ns = if n_old == 0 {
            lat.min
        } else {
            into.clat.min_ns.min(lat.min)
        };
        into.clat.max_ns = into.clat.max_ns.max(lat.max);
    }
    into.clat.samples = n_new;
    let mut bins: BTreeMap<u64, u64> = into.clat.bins.iter().copied().collect();
    for (k, c) in lat.bins {
        if let Ok(v) = k.parse::<u64>() {
            *bins.entry(v).or_default() += c;
        }
    }
    into.clat.bins = bins.into_iter().collect();
    // fio's own percentiles cannot be merged; keep them only for a single entry.
    into.clat.percentiles = if n_old == 0 {
        lat.percentile
            .iter()
            .filter_map(|(k, &v)| k.parse::<f64>().ok().map(|p| (p, v)))
            .collect()
    } else {
        Vec::new()
    };
    into.io_bytes += raw.io_bytes;
    into.bw_bytes += raw.bw_bytes;
    into.iops += raw.iops;
    into.total_ios += raw.total_ios;
    into.runtime_ms = into.runtime_ms.max(raw.runtime);
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANDREAD: &str = include_str!("testdata/randread-4k-qd8-io_uring.json");
    const RANDRW_NOTES: &str = include_str!("testdata/randrw70-psync-j2-notes.json");

    fn fio_pct(dir: &DirStats, p: f64) -> u64 {
        dir.clat
            .percentiles
            .iter()
            .find(|(k, _)| (k - p).abs() < 1e-9)
            .map(|&(_, v)| v)
            .unwrap()
    }

    /// Exact values copied from the captured JSON (see testdata/capture.sh).
    #[test]
    fn parses_time_based_randread() {
        let r = parse_output(RANDREAD.as_bytes()).unwrap();
        assert_eq!(r.fio_version, "fio-3.33");
        assert_eq!(r.error, 0);
        assert_eq!(r.job_entries, 1);
        assert_eq!(r.read.io_bytes, 313_856_000);
        assert_eq!(r.read.bw_bytes, 313_542_457);
        assert_eq!(r.read.iops, 76548.451548);
        assert_eq!(r.read.runtime_ms, 1001);
        assert_eq!(r.read.total_ios, 76625);
        assert_eq!(r.read.clat.samples, 76625);
        assert_eq!(r.read.clat.mean_ns, 100656.291145);
        assert_eq!(r.read.clat.bins.len(), 311);
        assert_eq!(r.read.clat.bins.iter().map(|b| b.1).sum::<u64>(), 76625);
        assert_eq!(r.write, DirStats::default());
        assert_eq!(r.usr_cpu_pct, 4.6);
        assert_eq!(r.sys_cpu_pct, 36.2);
        assert_eq!(r.iops(), 76548.451548);
        assert_eq!(r.runtime_s(), 1.001);
        assert_eq!(r.clat_mean_ns(), Some(100656.291145));
        // Percentiles recomputed from the bins equal fio's own, for every one fio printed.
        for &(p, v) in &r.read.clat.percentiles {
            assert_eq!(r.clat_percentile_ns(p), Some(v), "p{p}");
        }
        assert_eq!(fio_pct(&r.read, 50.0), 92672);
        assert_eq!(r.clat_percentile_ns(99.99), Some(3_063_808));
    }

    #[test]
    fn parses_randrw_after_note_lines() {
        assert!(RANDRW_NOTES.starts_with("note: both iodepth"));
        let r = parse_output(RANDRW_NOTES.as_bytes()).unwrap();
        assert_eq!(r.error, 0);
        assert_eq!(
            r.job_entries, 1,
            "numjobs=2 with group_reporting is one entry"
        );
        assert_eq!(r.read.io_bytes, 149_696_512);
        assert_eq!(r.write.io_bytes, 64_163_840);
        assert_eq!(r.read.iops, 36510.48951);
        assert_eq!(r.write.iops, 15649.350649);
        assert_eq!(r.iops(), 36510.48951 + 15649.350649);
        assert_eq!(r.bw_bytes(), 149_546_965 + 64_099_740);
        assert_eq!(r.total_ios(), 36547 + 15665);
        assert_eq!(r.runtime_s(), 1.001);
        assert_eq!(r.usr_cpu_pct, 2.45);
        assert_eq!(r.sys_cpu_pct, 22.4);
        assert_eq!(fio_pct(&r.read, 99.0), 321_536);
        assert_eq!(fio_pct(&r.write, 99.0), 14400);
        let mean = r.clat_mean_ns().unwrap();
        let want = (48283.3817 * 36547.0 + 2674.824577 * 15665.0) / (36547.0 + 15665.0);
        assert!((mean - want).abs() < 1e-6);
        // Over both directions, from the merged histogram (values checked with a separate
        // Python computation over the same JSON).
        assert_eq!(r.clat_percentile_ns(50.0), Some(2064));
        assert_eq!(r.clat_percentile_ns(90.0), Some(107_008));
        assert_eq!(r.clat_percentile_ns(99.0), Some(216_064));
        assert_eq!(r.clat_percentile_ns(99.9), Some(448_512));
        assert_eq!(r.clat_percentile_ns(99.99), Some(1_187_840));
        // A merged percentile lies between the two directions' own.
        let p99 = r.clat_percentile_ns(99.0).unwrap();
        assert!((14400..=321_536).contains(&p99));
    }

    #[test]
    fn finds_json_among_junk() {
        let body = RANDREAD.trim_end();
        let noisy = format!("fio: warning {{odd}} text\nnote: x\n{body}\ntrailing words\n");
        let r = parse_output(noisy.as_bytes()).unwrap();
        assert_eq!(r.read.io_bytes, 313_856_000);
        assert!(matches!(
            parse_output(b"fio: engine x not loadable\n"),
            Err(ParseError::NoJson(_))
        ));
        let cut = &body.as_bytes()[..body.len() / 2];
        assert!(matches!(parse_output(cut), Err(ParseError::Json(_))));
        assert!(matches!(
            parse_output(b"{\"jobs\": []}"),
            Err(ParseError::NoJobs)
        ));
    }

    #[test]
    fn merges_entries_without_group_reporting() {
        // Two entries as fio prints them without --group_reporting.
        let one = r#"{"read":{"io_bytes":100,"bw_bytes":10,"iops":1.5,"runtime":1000,"total_ios":3,
            "clat_ns":{"N":3,"mean":10.0,"min":5,"max":20,"bins":{"5":1,"10":1,"20":1}}},
            "usr_cpu":2.0,"sys_cpu":4.0,"error":0}"#;
        let two = r#"{"read":{"io_bytes":50,"bw_bytes":5,"iops":0.5,"runtime":1200,"total_ios":1,
            "clat_ns":{"N":1,"mean":30.0,"min":30,"max":30,"bins":{"30":1}}},
            "usr_cpu":4.0,"sys_cpu":6.0,"error":5}"#;
        let json = format!("{{\"fio version\":\"fio-3.33\",\"jobs\":[{one},{two}]}}");
        let r = parse_output(json.as_bytes()).unwrap();
        assert_eq!(r.job_entries, 2);
        assert_eq!(r.error, 5);
        assert_eq!(r.read.io_bytes, 150);
        assert_eq!(r.read.iops, 2.0);
        assert_eq!(r.read.runtime_ms, 1200);
        assert_eq!(r.read.clat.samples, 4);
        assert_eq!(r.read.clat.mean_ns, 15.0);
        assert_eq!((r.read.clat.min_ns, r.read.clat.max_ns), (5, 30));
        assert_eq!(r.usr_cpu_pct, 3.0);
        assert_eq!(r.clat_percentile_ns(50.0), Some(10));
        assert_eq!(r.clat_percentile_ns(99.0), Some(30));
    }

    #[test]
    fn percentile_rule_matches_fio() {
        let bins = [(1, 50), (2, 40), (3, 10)];
        assert_eq!(percentile_from_bins(&bins, 50.0), Some(1));
        assert_eq!(percentile_from_bins(&bins, 50.1), Some(2));
        assert_eq!(percentile_from_bins(&bins, 90.0), Some(2));
        assert_eq!(percentile_from_bins(&bins, 99.99), Some(3));
        assert_eq!(percentile_from_bins(&[], 50.0), None);
    }
}

#[cfg(test)]
mod fuzz {
    use super::parse_output;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// Arbitrary bytes never panic the parser.
        #[test]
        fn any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let _ = parse_output(&bytes);
        }

        /// A real fio output cut, spliced or with junk around it never panics the parser.
        #[test]
        fn damaged_real_output(cut in 0usize..20_000, junk in "\\PC{0,80}", at in 0usize..20_000) {
            let real = include_bytes!("testdata/randread-4k-qd8-io_uring.json");
            let mut v = real[..cut.min(real.len())].to_vec();
            let at = at.min(v.len());
            v.splice(at..at, junk.bytes());
            let _ = parse_output(&v);
        }
    }
}
