//! The Python venv with the `mcp` SDK that `tests/mcp/install.sh` makes (outside the clone, so
//! fresh clones reuse it; `SIGNOFF_MCP_VENV` overrides where).

use std::path::{Path, PathBuf};

/// The venv's python; the test fails, saying what to run, when it is missing.
pub fn mcp_python() -> PathBuf {
    let venv = std::env::var_os("SIGNOFF_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var("HOME").unwrap()).join(".cache/signoff/mcp-venv")
        });
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run crates/server/tests/mcp/install.sh (scripts/test.sh does) to \
         install the Python MCP SDK",
        python.display()
    );
    python
}
