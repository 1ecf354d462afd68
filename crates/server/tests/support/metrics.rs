//! A strict reader of the text `GET /metrics` serves (the OpenMetrics 1.0 text that Prometheus
//! scrapes): it refuses what a scraper would refuse (a sample outside its family, a bad name,
//! label or value, a repeated series, a histogram whose buckets do not add up, a missing
//! `# EOF`), and gives the samples by name and labels.

use std::collections::{BTreeMap, HashMap, HashSet};

/// One scrape: each family's type, and every sample by its series (`name{k="v",…}`, labels
/// sorted).
#[derive(Debug, Default)]
pub struct Scrape {
    pub types: HashMap<String, String>,
    pub samples: BTreeMap<String, f64>,
}

impl Scrape {
    /// The sample `name` with exactly `labels`, if the scrape has it.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let labels: Vec<(String, String)> = labels
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        self.samples.get(&series(name, labels)).copied()
    }

    /// The sample, or 0 when the series has not appeared yet (a labelled series appears with
    /// its first count).
    pub fn count(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.value(name, labels).unwrap_or(0.0)
    }
}

/// The key of one series: its name and sorted labels.
fn series(name: &str, mut labels: Vec<(String, String)>) -> String {
    labels.sort();
    let labels: Vec<String> = labels
        .iter()
        .map(|(key, value)| format!("{key}={value:?}"))
        .collect();
    format!("{name}{{{}}}", labels.join(","))
}

fn is_name(text: &str, colons: bool) -> bool {
    let mut chars = text.chars();
    let first_ok = |c: char| c.is_ascii_alphabetic() || c == '_' || (colons && c == ':');
    chars.next().is_some_and(first_ok)
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colons && c == ':'))
}

/// The suffixes a sample of a family of `kind` may add to the family's name.
fn suffixes(kind: &str) -> &'static [&'static str] {
    match kind {
        "counter" => &["_total", "_created"],
        "histogram" => &["_bucket", "_sum", "_count", "_created"],
        "summary" => &["", "_sum", "_count", "_created"],
        "info" => &["_info"],
        _ => &[""],
    }
}

/// A sample's labels, in the order written.
type Labels = Vec<(String, String)>;

/// `{k="v",…}` at the start of `text`: the labels and the rest of the line.
fn labels(text: &str) -> Result<(Labels, &str), String> {
    let Some(mut rest) = text.strip_prefix('{') else {
        return Ok((Vec::new(), text));
    };
    let mut out: Labels = Vec::new();
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((out, after));
        }
        let (key, after) = rest
            .split_once("=\"")
            .ok_or_else(|| format!("a label without =\": {rest}"))?;
        if !is_name(key, false) || out.iter().any(|(seen, _)| seen == key) {
            return Err(format!("bad or repeated label name {key:?}"));
        }
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c @ ('\\' | '"'))) => value.push(c),
                    other => return Err(format!("bad escape in a label value: {other:?}")),
                },
                Some((at, '"')) => break at,
                Some((_, c)) => value.push(c),
                None => return Err(format!("an unterminated label value: {after}")),
            }
        };
        out.push((key.to_owned(), value));
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn number(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text
            .parse::<f64>()
            .map_err(|_| format!("not a number: {text:?}")),
    }
}

/// Reads `text` strictly; the error says which line is wrong and why.
pub fn parse_metrics(text: &str) -> Result<Scrape, String> {
    let body = text
        .strip_suffix("# EOF\n")
        .ok_or("the text does not end with \"# EOF\"")?;
    let mut scrape = Scrape::default();
    // The family whose samples may come now; families seen already (they may not come back).
    let mut current: Option<(String, String)> = None;
    let mut closed: HashSet<String> = HashSet::new();
    // Histogram series: (family, labels without le) -> (buckets by le, count).
    type Buckets = Vec<(f64, f64)>;
    let mut histograms: BTreeMap<(String, String), (Buckets, Option<f64>)> = BTreeMap::new();
    for (number_of_line, line) in body.lines().enumerate() {
        let at = |why: String| format!("line {}: {why}: {line:?}", number_of_line + 1);
        if let Some(meta) = line.strip_prefix("# ") {
            let mut words = meta.splitn(3, ' ');
            let (what, name, rest) = (words.next(), words.next(), words.next());
            let (Some(what), Some(name)) = (what, name) else {
                return Err(at("a comment line that is not HELP, TYPE or UNIT".into()));
            };
            if !is_name(name, true) {
                return Err(at(format!("bad family name {name:?}")));
            }
            if current.as_ref().is_none_or(|(family, _)| family != name) {
                if closed.contains(name) {
                    return Err(at(format!("family {name} comes twice")));
                }
                if let Some((family, _)) = current.take() {
                    closed.insert(family);
                }
                current = Some((name.to_owned(), "unknown".to_owned()));
            }
            match (what, rest) {
                ("TYPE", Some(kind)) => {
                    let known = [
                        "counter",
                        "gauge",
                        "histogram",
                        "gaugehistogram",
                        "summary",
                        "info",
                        "stateset",
                        "unknown",
                    ];
                    if !known.contains(&kind) || scrape.types.contains_key(name) {
                        return Err(at(format!("bad or repeated TYPE {kind:?}")));
                    }
                    scrape.types.insert(name.to_owned(), kind.to_owned());
                    current = Some((name.to_owned(), kind.to_owned()));
                }
                ("HELP" | "UNIT", Some(_)) => {}
                _ => return Err(at("a comment line that is not HELP, TYPE or UNIT".into())),
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| at("a sample without a value".into()))?;
        let name = &line[..name_end];
        let (labels, rest) = labels(&line[name_end..]).map_err(at)?;
        let mut values = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?
            .split(' ');
        let value = number(values.next().unwrap_or_default()).map_err(at)?;
        if let Some(timestamp) = values.next() {
            number(timestamp).map_err(at)?;
        }
        if values.next().is_some() {
            return Err(at("more than a value and a timestamp".into()));
        }
        let Some((family, kind)) = &current else {
            return Err(at("a sample before any family".into()));
        };
        let suffix = name
            .strip_prefix(family.as_str())
            .ok_or_else(|| at(format!("a sample outside its family {family}")))?;
        if !suffixes(kind).contains(&suffix) {
            return Err(at(format!("suffix {suffix:?} in a {kind}")));
        }
        if kind == "counter" && suffix == "_total" && (value.is_nan() || value < 0.0) {
            return Err(at("a counter below zero".into()));
        }
        if kind == "histogram" {
            let le = labels.iter().find(|(key, _)| key == "le");
            let others: Vec<(String, String)> = labels
                .iter()
                .filter(|(key, _)| key != "le")
                .cloned()
                .collect();
            let entry = histograms
                .entry((family.clone(), series("", others)))
                .or_default();
            match (suffix, le) {
                ("_bucket", Some((_, le))) => entry.0.push((number(le).map_err(at)?, value)),
                ("_bucket", None) => return Err(at("a bucket without le".into())),
                ("_count", _) => entry.1 = Some(value),
                _ => {}
            }
        }
        if scrape.samples.insert(series(name, labels), value).is_some() {
            return Err(at("a series that comes twice".into()));
        }
    }
    for ((family, labels), (buckets, count)) in &histograms {
        let what = format!("histogram {family}{labels}");
        let ascending = buckets.windows(2).all(|pair| pair[0].0 < pair[1].0);
        let cumulative = buckets.windows(2).all(|pair| pair[0].1 <= pair[1].1);
        if !ascending || !cumulative {
            return Err(format!("{what}: buckets out of order or not cumulative"));
        }
        match buckets.last() {
            Some((le, last)) if le.is_infinite() && Some(*last) == *count => {}
            _ => return Err(format!("{what}: its +Inf bucket is not its count")),
        }
    }
    Ok(scrape)
}
