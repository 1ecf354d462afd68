//! A bound on how deeply a Cedar file nests, checked before the Cedar parser reads it: the
//! parser, and the evaluator after it, recurse once per level, so a file of a thousand nested
//! parentheses would overflow the stack of `signoff policy check` and of the server at start
//! (and a deep expression, of the request that evaluates it) instead of being refused.

/// The deepest nesting of brackets (`(`, `[`, `{`) a policy file may have: far past what a
/// readable policy needs, far short of what the parser's stack holds.
pub const MAX_NESTING: usize = 32;

/// The longest run of prefix operators (`!`, `-`) a policy file may have.
pub const MAX_PREFIX_RUN: usize = 8;

/// Why a file nests too deeply: the text names the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep(pub String);

/// Checks `text` (a Cedar file) for brackets nested deeper than [`MAX_NESTING`] and runs of
/// prefix operators longer than [`MAX_PREFIX_RUN`], outside string literals and comments.
pub fn check(text: &str) -> Result<(), TooDeep> {
    let mut depth = 0usize;
    let mut prefix_run = 0usize;
    let mut line = 1usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            '"' => {
                // A string literal, its escapes included, ends at the next unescaped quote.
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        '\n' => line += 1,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(TooDeep(format!(
                        "line {line}: brackets nest deeper than {MAX_NESTING} levels, the most a \
                         policy may"
                    )));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        prefix_run = match c {
            '!' | '-' if chars.peek() != Some(&'=') => prefix_run + 1,
            c if c.is_whitespace() => prefix_run,
            _ => 0,
        };
        if prefix_run > MAX_PREFIX_RUN {
            return Err(TooDeep(format!(
                "line {line}: more than {MAX_PREFIX_RUN} prefix operators (! or -) in a row, the \
                 most a policy may"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_nested_too_deeply_are_refused_with_their_line() {
        let deep = format!(
            "permit(principal, action, resource)\nwhen {{ {}true{} }};",
            "(".repeat(1000),
            ")".repeat(1000)
        );
        let err = check(&deep).unwrap_err();
        assert!(
            err.0.starts_with("line 2: brackets nest deeper than 32"),
            "{err:?}"
        );
        let deepest = format!(
            "permit(principal, action, resource) when {{ {}true{} }};",
            "(".repeat(MAX_NESTING - 2),
            ")".repeat(MAX_NESTING - 2)
        );
        assert_eq!(check(&deepest), Ok(()));
        let many = format!(
            "permit(principal, action, resource) when {{ {}true }};",
            "!".repeat(9)
        );
        assert!(check(&many).unwrap_err().0.contains("prefix operators"));
    }

    #[test]
    fn strings_and_comments_do_not_count() {
        let text = format!(
            "// {}\npermit(principal, action, resource)\nwhen {{ context.s == \"{}\\\"{}\" && \
             context.n != -1 }};",
            "(".repeat(100),
            "[".repeat(100),
            "!!!!!!!!!!!!"
        );
        assert_eq!(check(&text), Ok(()));
    }
}
