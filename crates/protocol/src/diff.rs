//! A small line diff and its unified text, for the preview of what a file write changes
//! (docs/wire.md, Previews). The server writes it at pause time; the UI runs the same code on
//! an edited write, against the current text the preview carries.
//!
//! Myers' O(ND) algorithm over the lines between the common prefix and suffix, with a cap on
//! its work ([`MAX_WORK`] comparisons and diagonals): past it the middle is shown as removed,
//! then added, which is a correct diff, only not the shortest. So a huge or wholly rewritten
//! file costs a bounded amount of time and memory, whoever sends it.

/// The most steps (line comparisons and diagonals visited) one diff may take before it gives
/// up on the shortest edit: a Myers table of at most this many entries, and at most a few tens
/// of milliseconds (measured in release on a shared 2-core machine: 26 ms for two 50,000-line
/// texts with nothing in common, 7 ms for 100,000 lines with one change).
pub const MAX_WORK: usize = 1_000_000;

/// Lines of context around each change, as `diff -u` shows.
const CONTEXT: usize = 3;

/// How much unified text [`unified`] writes before it stops with "… N more lines".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    pub max_lines: usize,
    pub max_bytes: usize,
}

/// The caps of a preview: enough to read a change, small enough for an interrupt event.
pub const PREVIEW_CAPS: Caps = Caps {
    max_lines: 200,
    max_bytes: 32 * 1024,
};

/// What a run of lines does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Keep,
    Remove,
    Add,
}

/// `len` lines of one kind, starting at line `old` of the old text and `new` of the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    kind: Kind,
    old: usize,
    new: usize,
    len: usize,
}

/// The lines of `text`, each with its newline (the last may have none).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// The edit script from `old` to `new` as runs, in order.
fn runs(old: &[&str], new: &[&str]) -> Vec<Run> {
    let prefix = old
        .iter()
        .zip(new)
        .take_while(|(left, right)| left == right)
        .count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(left, right)| left == right)
        .count();
    let middle_old = &old[prefix..old.len() - suffix];
    let middle_new = &new[prefix..new.len() - suffix];
    let mut out = Vec::new();
    push(&mut out, Kind::Keep, 0, 0, prefix);
    match myers(middle_old, middle_new) {
        Some(steps) => {
            for (kind, at_old, at_new) in steps {
                push(&mut out, kind, prefix + at_old, prefix + at_new, 1);
            }
        }
        None => {
            push(&mut out, Kind::Remove, prefix, prefix, middle_old.len());
            push(
                &mut out,
                Kind::Add,
                prefix + middle_old.len(),
                prefix,
                middle_new.len(),
            );
        }
    }
    push(
        &mut out,
        Kind::Keep,
        old.len() - suffix,
        new.len() - suffix,
        suffix,
    );
    out
}

/// Appends `len` lines of `kind`, merged into the last run when it continues it.
fn push(out: &mut Vec<Run>, kind: Kind, old: usize, new: usize, len: usize) {
    if len == 0 {
        return;
    }
    if let Some(last) = out.last_mut() {
        let continues = last.kind == kind
            && match kind {
                Kind::Keep => last.old + last.len == old && last.new + last.len == new,
                Kind::Remove => last.old + last.len == old,
                Kind::Add => last.new + last.len == new,
            };
        if continues {
            last.len += len;
            return;
        }
    }
    out.push(Run {
        kind,
        old,
        new,
        len,
    });
}

/// Myers' shortest edit script, one step per line: (kind, line in old, line in new). `None`
/// when it would take more than [`MAX_WORK`] steps.
fn myers(old: &[&str], new: &[&str]) -> Option<Vec<(Kind, usize, usize)>> {
    let (n, m) = (old.len() as isize, new.len() as isize);
    // Round d visits 2d+1 diagonals, each a step: d never goes past √MAX_WORK.
    let max_d = (n + m).min(MAX_WORK.isqrt() as isize + 1);
    let offset = max_d + 1;
    let mut v = vec![0isize; 2 * offset as usize + 1];
    // The furthest x of each diagonal after each round, kept as the window -d..=d.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    let mut work = 0usize;
    let mut end = None;
    'rounds: for d in 0..=max_d {
        for k in (-d..=d).step_by(2) {
            let at = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[at - 1] < v[at + 1]) {
                v[at + 1]
            } else {
                v[at - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && old[x as usize] == new[y as usize] {
                x += 1;
                y += 1;
                work += 1;
            }
            work += 1;
            if work > MAX_WORK {
                return None;
            }
            v[at] = x;
            if x >= n && y >= m {
                trace.push(v[(offset - d) as usize..=(offset + d) as usize].to_vec());
                end = Some(d);
                break 'rounds;
            }
        }
        trace.push(v[(offset - d) as usize..=(offset + d) as usize].to_vec());
    }
    let end = end?;
    let mut steps = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=end).rev() {
        let previous = &trace[d as usize - 1];
        let at = |k: isize| previous[(k + d - 1) as usize];
        let k = x - y;
        let previous_k = if k == -d || (k != d && at(k - 1) < at(k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let previous_x = at(previous_k);
        let previous_y = previous_x - previous_k;
        while x > previous_x && y > previous_y {
            x -= 1;
            y -= 1;
            steps.push((Kind::Keep, x as usize, y as usize));
        }
        if previous_k == k + 1 {
            steps.push((Kind::Add, x as usize, previous_y as usize));
        } else {
            steps.push((Kind::Remove, previous_x as usize, y as usize));
        }
        x = previous_x;
        y = previous_y;
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        steps.push((Kind::Keep, x as usize, y as usize));
    }
    steps.reverse();
    Some(steps)
}

/// The unified diff of `old` to `new` for `path` (`--- a/path`, `+++ b/path`, hunks with three
/// lines of context), cut at `caps` with a last line "… N more lines". Empty when the texts are
/// the same.
pub fn unified(path: &str, old: &str, new: &str, caps: Caps) -> String {
    let old_lines = lines(old);
    let new_lines = lines(new);
    let runs = runs(&old_lines, &new_lines);
    if runs.iter().all(|run| run.kind == Kind::Keep) {
        return String::new();
    }
    let mut out = Output {
        text: format!("--- a/{path}\n+++ b/{path}\n"),
        caps,
        shown: 0,
        more: 0,
    };
    for hunk in hunks(&runs) {
        let (old_start, old_len, new_start, new_len) = hunk_span(&hunk);
        out.line(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_len),
            range(new_start, new_len)
        ));
        for run in hunk {
            for index in 0..run.len {
                let (sign, line) = match run.kind {
                    Kind::Keep => (' ', old_lines[run.old + index]),
                    Kind::Remove => ('-', old_lines[run.old + index]),
                    Kind::Add => ('+', new_lines[run.new + index]),
                };
                if line.ends_with('\n') {
                    out.line(&format!("{sign}{line}"));
                } else {
                    out.line(&format!("{sign}{line}\n"));
                    out.line("\\ No newline at end of file\n");
                }
            }
        }
    }
    if out.more > 0 {
        out.text.push_str(&format!("… {} more lines\n", out.more));
    }
    out.text
}

/// The unified text as it is written: lines past the caps are only counted.
struct Output {
    text: String,
    caps: Caps,
    shown: usize,
    more: usize,
}

impl Output {
    fn line(&mut self, line: &str) {
        if self.more > 0
            || self.shown == self.caps.max_lines
            || self.text.len() + line.len() > self.caps.max_bytes
        {
            self.more += 1;
            return;
        }
        self.text.push_str(line);
        self.shown += 1;
    }
}

/// Groups runs into hunks: changes closer than twice the context share one hunk, each with
/// at most [`CONTEXT`] kept lines before and after.
fn hunks(runs: &[Run]) -> Vec<Vec<Run>> {
    let mut hunks: Vec<Vec<Run>> = Vec::new();
    let mut current: Vec<Run> = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        if run.kind != Kind::Keep {
            current.push(*run);
            continue;
        }
        let first = index == 0;
        let last = index + 1 == runs.len();
        if first {
            let keep = run.len.min(CONTEXT);
            current.push(Run {
                old: run.old + run.len - keep,
                new: run.new + run.len - keep,
                len: keep,
                ..*run
            });
        } else if last {
            current.push(Run {
                len: run.len.min(CONTEXT),
                ..*run
            });
        } else if run.len > 2 * CONTEXT {
            current.push(Run {
                len: CONTEXT,
                ..*run
            });
            hunks.push(std::mem::take(&mut current));
            current.push(Run {
                old: run.old + run.len - CONTEXT,
                new: run.new + run.len - CONTEXT,
                len: CONTEXT,
                ..*run
            });
        } else {
            current.push(*run);
        }
    }
    if current.iter().any(|run| run.kind != Kind::Keep) {
        hunks.push(current);
    }
    hunks
}

/// A hunk's first line and length in the old and the new text (0-based starts).
fn hunk_span(hunk: &[Run]) -> (usize, usize, usize, usize) {
    let count = |kind: Kind| -> usize {
        hunk.iter()
            .filter(|run| run.kind == Kind::Keep || run.kind == kind)
            .map(|run| run.len)
            .sum()
    };
    let first = hunk.first().copied();
    let old_start = first.map(|run| run.old).unwrap_or(0);
    let new_start = first.map(|run| run.new).unwrap_or(0);
    (old_start, count(Kind::Remove), new_start, count(Kind::Add))
}

/// `start,len` as a hunk header writes it (1-based; an empty range names the line before).
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: Caps = Caps {
        max_lines: usize::MAX,
        max_bytes: usize::MAX,
    };

    /// Applies a unified diff (as `patch` would, without fuzz) to check it is a true one.
    fn apply(old: &str, diff: &str) -> String {
        let old_lines = lines(old);
        let mut out = String::new();
        let mut at = 0;
        let mut body = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(line) = body.next() {
            if let Some(header) = line.strip_prefix("@@ -") {
                let start: usize = header
                    .split([',', ' '])
                    .next()
                    .and_then(|start| start.parse().ok())
                    .unwrap();
                let len_zero = header.split(' ').next().unwrap().ends_with(",0");
                let start = if len_zero { start } else { start - 1 };
                while at < start {
                    out.push_str(old_lines[at]);
                    at += 1;
                }
                continue;
            }
            let no_newline = body.peek() == Some(&"\\ No newline at end of file\n");
            let text = &line[1..];
            let text = if no_newline {
                text.strip_suffix('\n').unwrap()
            } else {
                text
            };
            match line.as_bytes()[0] {
                b' ' => {
                    assert_eq!(old_lines[at], text);
                    out.push_str(text);
                    at += 1;
                }
                b'-' => {
                    assert_eq!(old_lines[at], text);
                    at += 1;
                }
                b'+' => out.push_str(text),
                b'\\' => {}
                other => panic!("unexpected line start {other}"),
            }
            if no_newline {
                body.next();
            }
        }
        while at < old_lines.len() {
            out.push_str(old_lines[at]);
            at += 1;
        }
        out
    }

    #[test]
    fn a_changed_line_is_one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified("notes.txt", old, new, BIG),
            "--- a/notes.txt\n+++ b/notes.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn far_apart_changes_are_separate_hunks_and_the_diff_applies() {
        let old: String = (0..40).map(|line| format!("line {line}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 30\n", "")
            + "tail";
        let diff = unified("f", &old, &new, BIG);
        assert_eq!(diff.matches("@@ -").count(), 3, "{diff}");
        assert!(
            diff.contains("+tail\n\\ No newline at end of file\n"),
            "{diff}"
        );
        assert_eq!(apply(&old, &diff), new);
    }

    #[test]
    fn same_text_is_an_empty_diff_and_empty_files_work() {
        assert_eq!(unified("f", "x\n", "x\n", BIG), "");
        assert_eq!(apply("", &unified("f", "", "a\nb\n", BIG)), "a\nb\n");
        assert_eq!(apply("a\nb\n", &unified("f", "a\nb\n", "", BIG)), "");
        assert_eq!(
            unified("f", "", "a\n", BIG),
            "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n"
        );
    }

    #[test]
    fn diffs_apply_for_many_small_edits() {
        // A fixed pseudo-random walk: deterministic, and covering inserts, deletes and swaps.
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for _ in 0..200 {
            let old: Vec<String> = (0..next() % 30)
                .map(|_| format!("{}\n", next() % 5))
                .collect();
            let mut new = old.clone();
            for _ in 0..next() % 6 {
                match next() % 3 {
                    0 if !new.is_empty() => {
                        let at = next() % new.len();
                        new.remove(at);
                    }
                    _ => {
                        let at = next() % (new.len() + 1);
                        new.insert(at, format!("{}\n", next() % 5));
                    }
                }
            }
            let (old, new) = (old.concat(), new.concat());
            assert_eq!(apply(&old, &unified("f", &old, &new, BIG)), new);
        }
    }

    #[test]
    fn the_script_is_shortest_within_the_cap() {
        let old = lines("a\nb\nc\na\nb\nb\na\n");
        let new = lines("c\nb\na\nb\na\nc\n");
        let changed: usize = runs(&old, &new)
            .iter()
            .filter(|run| run.kind != Kind::Keep)
            .map(|run| run.len)
            .sum();
        // Myers' paper's example: an edit distance of 5.
        assert_eq!(changed, 5);
    }

    #[test]
    fn output_is_capped_with_the_count_of_what_was_left_out() {
        let old: String = (0..1000).map(|line| format!("{line}\n")).collect();
        let new: String = (0..1000).map(|line| format!("new {line}\n")).collect();
        let diff = unified("f", &old, &new, PREVIEW_CAPS);
        let shown: Vec<&str> = diff.lines().collect();
        // Two headers, 200 lines, and the count: the hunk header and 2000 lines, less 200.
        assert_eq!(shown.len(), 203);
        assert_eq!(shown[202], "… 1801 more lines");
        let tiny = Caps {
            max_lines: 1000,
            max_bytes: 100,
        };
        assert!(unified("f", &old, &new, tiny).len() < 130);
    }

    #[test]
    fn work_is_bounded_for_wholly_different_large_texts() {
        // 50,000 lines with nothing in common: the shortest script would take 10^5 rounds;
        // the cap gives up and shows all removed then all added, still a true diff.
        let old: String = (0..50_000).map(|line| format!("a{line}\n")).collect();
        let new: String = (0..50_000).map(|line| format!("b{line}\n")).collect();
        let old_lines = lines(&old);
        let new_lines = lines(&new);
        assert_eq!(myers(&old_lines, &new_lines), None);
        let diff = unified("f", &old, &new, BIG);
        assert_eq!(apply(&old, &diff), new);
    }
}
