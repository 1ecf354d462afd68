//! The results: a plain-text table for people and `results.json` for tools, with the machine
//! and the commit they were measured on.

use std::fmt::Write as _;

use serde::Serialize;

use crate::stats::{Figure, Summary};

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub memory_mib: u64,
    pub kernel: String,
    /// /proc/loadavg when the bench started: other work on the machine skews the figures.
    pub load_average: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .and_then(|rest| rest.split_once(':'))
            .map(|(_, name)| name.trim().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_mib = meminfo
            .lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib / 1024);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|text| text.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .map(|text| {
                text.split_whitespace()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu,
            memory_mib,
            kernel,
            load_average,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub machine: Machine,
    pub commit: String,
    /// The working tree had changes not in `commit`.
    pub dirty: bool,
    /// Seconds the whole bench took.
    pub duration_secs: f64,
    /// 1.0 runs the counts; less runs a quick, smaller bench.
    pub scale: f64,
    pub figures: Vec<Figure>,
}

fn number(value: f64) -> String {
    if value.is_nan() {
        "-".to_owned()
    } else if value.abs() >= 1000.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The table: one row per figure, grouped, with each note under its row.
pub fn table(results: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Signoff bench: commit {}{}, {} cores ({}), {} MiB, Linux {}, {:.0} s{}",
        results.commit,
        if results.dirty {
            " (+ local changes)"
        } else {
            ""
        },
        results.machine.cores,
        results.machine.cpu,
        results.machine.memory_mib,
        results.machine.kernel,
        results.duration_secs,
        if results.scale < 1.0 {
            format!(", QUICK RUN (scale {})", results.scale)
        } else {
            String::new()
        },
    );
    let width = results
        .figures
        .iter()
        .map(|figure| figure.name.len() + 2)
        .max()
        .unwrap_or(20)
        .max(20);
    let mut group = "";
    for figure in &results.figures {
        if figure.group != group {
            group = &figure.group;
            let _ = writeln!(out, "\n{group}");
            let _ = writeln!(
                out,
                "  {:<width$} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9}",
                "figure", "unit", "n", "min", "median", "p99", "max"
            );
        }
        match figure.summary {
            Some(Summary {
                n,
                min,
                median,
                p99,
                max,
            }) => {
                let _ = writeln!(
                    out,
                    "  {:<width$} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9}",
                    figure.name,
                    figure.unit,
                    n,
                    number(min),
                    number(median),
                    number(p99),
                    number(max)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {:<width$} {:>8} {:>6}",
                    figure.name, figure.unit, "-"
                );
            }
        }
        if let Some(note) = &figure.note {
            let _ = writeln!(out, "  {:<width$}   -> {note}", "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_every_figure_and_its_note() {
        let results = Results {
            machine: Machine {
                cores: 2,
                cpu: "test cpu".into(),
                memory_mib: 1024,
                kernel: "6.1".into(),
                load_average: "0.10 0.20 0.30".into(),
            },
            commit: "abc123".into(),
            dirty: false,
            duration_secs: 12.0,
            scale: 1.0,
            figures: vec![
                Figure::samples("latency", "time to pause", "ms", &[1.0, 2.0, 3.0]),
                Figure::missing("endpoints", "MCP", "ms", "n/a (not built yet)"),
            ],
        };
        let table = table(&results);
        assert!(
            table.contains("commit abc123, 2 cores (test cpu)"),
            "{table}"
        );
        assert!(table.contains("time to pause"), "{table}");
        assert!(table.contains("2.00"), "{table}");
        assert!(table.contains("-> n/a (not built yet)"), "{table}");
        let json = serde_json::to_value(&results).unwrap_or_default();
        assert_eq!(json["figures"][0]["median"], 2.0);
        assert_eq!(json["figures"][0]["p99"], 3.0);
        assert_eq!(json["figures"][1]["note"], "n/a (not built yet)");
        assert_eq!(json["machine"]["cores"], 2);
    }
}
