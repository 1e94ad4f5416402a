//! `mipstream bench --dump-plans DIR`: each compared frame's budget-fit
//! problem as JSON, one file per frame, and the reader `mipstream certify`
//! uses, so what the bench writes is what the certificate is checked on.
//!
//! A file: `{"strategy", "run_budget", "bench_frame", "frame",
//! "budget", "fixed_error", "plan_error", "reported_bound",
//! "reported_lp_gap", "chains": [[[bytes, error, grow], ...], ...],
//! "resident", "locked", "choice"}` (`frame`: the streamer's update that
//! planned it; `reported_lp_gap`: the `fit_gap_lp` the streamer reported for
//! that frame, a share of the plan's error).

use mipstream::plan::certify::{FitProblem, State};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Why a dumped problem could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a dumped problem.
    #[error("{path}: not a dumped plan ({what})")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
}

/// A dumped problem with what the streamer reported for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Dumped {
    /// The strategy that planned it.
    pub strategy: String,
    /// The run's configured budget in bytes.
    pub run_budget: u64,
    /// The bench's frame index.
    pub bench_frame: u64,
    /// The problem.
    pub problem: FitProblem,
    /// The LP gap the streamer reported (a share of the plan's error).
    pub reported_lp_gap: Option<f64>,
}

impl Dumped {
    /// The JSON of it.
    pub fn to_json(&self) -> Value {
        let p = &self.problem;
        let chains: Vec<Value> = p
            .chains
            .iter()
            .map(|c| {
                Value::from(
                    c.iter()
                        .map(|s| json!([s.bytes, s.error, s.grow]))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        json!({
            "strategy": self.strategy,
            "run_budget": self.run_budget,
            "bench_frame": self.bench_frame,
            "frame": p.frame,
            "budget": p.budget,
            "fixed_error": p.fixed_error,
            "plan_error": p.plan_error,
            "reported_bound": p.reported_bound,
            "reported_lp_gap": self.reported_lp_gap,
            "chains": chains,
            "resident": p.resident,
            "locked": p.locked,
            "choice": p.choice,
        })
    }

    /// The file name it is written under in a dump folder.
    pub fn file_name(&self) -> String {
        format!(
            "{}-{}-f{:05}.json",
            self.strategy, self.run_budget, self.bench_frame
        )
    }

    /// Writes it into `dir` (created when missing).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, DumpError> {
        let path = dir.join(self.file_name());
        let io = |source| DumpError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::write(&path, self.to_json().to_string()).map_err(io)?;
        Ok(path)
    }

    /// Reads a file [`Dumped::write`] wrote.
    pub fn read(path: &Path) -> Result<Self, DumpError> {
        let text = std::fs::read_to_string(path).map_err(|source| DumpError::Io {
            path: path.to_owned(),
            source,
        })?;
        let bad = |what: &str| DumpError::Format {
            path: path.to_owned(),
            what: what.to_owned(),
        };
        let v: Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let num = |k: &str| v.get(k).and_then(Value::as_f64).ok_or_else(|| bad(k));
        let int = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| bad(k));
        let list = |k: &str| v.get(k).and_then(Value::as_array).ok_or_else(|| bad(k));
        let chains = list("chains")?
            .iter()
            .map(|c| {
                c.as_array()
                    .ok_or_else(|| bad("chains"))?
                    .iter()
                    .map(|s| {
                        let s = s
                            .as_array()
                            .filter(|s| s.len() == 3)
                            .ok_or_else(|| bad("state"))?;
                        Ok(State {
                            bytes: s[0].as_u64().ok_or_else(|| bad("bytes"))?,
                            error: s[1].as_f64().ok_or_else(|| bad("error"))?,
                            grow: s[2].as_u64().ok_or_else(|| bad("grow"))?,
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ints = |k: &str| -> Result<Vec<u32>, DumpError> {
            list(k)?
                .iter()
                .map(|x| x.as_u64().map(|x| x as u32).ok_or_else(|| bad(k)))
                .collect()
        };
        let problem = FitProblem {
            frame: int("frame")?,
            budget: int("budget")?,
            fixed_error: num("fixed_error")?,
            resident: ints("resident")?,
            locked: list("locked")?
                .iter()
                .map(|x| x.as_bool().ok_or_else(|| bad("locked")))
                .collect::<Result<_, _>>()?,
            choice: ints("choice")?,
            plan_error: num("plan_error")?,
            reported_bound: v.get("reported_bound").and_then(Value::as_f64),
            chains,
        };
        if problem.choice.len() != problem.chains.len()
            || problem
                .choice
                .iter()
                .zip(&problem.chains)
                .any(|(&k, c)| k as usize >= c.len())
        {
            return Err(bad("a choice per chain, within it"));
        }
        Ok(Self {
            strategy: v
                .get("strategy")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("strategy"))?
                .to_owned(),
            run_budget: int("run_budget")?,
            bench_frame: int("bench_frame")?,
            problem,
            reported_lp_gap: v.get("reported_lp_gap").and_then(Value::as_f64),
        })
    }
}

/// Every `.json` file in `dir`, by name.
pub fn dumped_files(dir: &Path) -> Result<Vec<PathBuf>, DumpError> {
    let io = |source| DumpError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dumped_problem_reads_back_as_written_and_bad_files_are_refused() {
        let d = Dumped {
            strategy: "mipstream".into(),
            run_budget: 2048,
            bench_frame: 30,
            problem: FitProblem {
                frame: 31,
                budget: 1000,
                fixed_error: 2.5,
                chains: vec![
                    vec![
                        State {
                            bytes: 10,
                            error: 9.0,
                            grow: 0,
                        },
                        State {
                            bytes: 40,
                            error: 1.25,
                            grow: 80,
                        },
                    ],
                    vec![State {
                        bytes: 5,
                        error: 3.0,
                        grow: 0,
                    }],
                ],
                resident: vec![0, 0],
                locked: vec![true, false],
                choice: vec![1, 0],
                plan_error: 6.75,
                reported_bound: Some(6.0),
            },
            reported_lp_gap: Some(0.111),
        };
        let dir = std::env::temp_dir().join(format!("mipstream-dump-{}", std::process::id()));
        let path = d.write(&dir).unwrap();
        assert_eq!(path.file_name().unwrap(), "mipstream-2048-f00030.json");
        assert_eq!(Dumped::read(&path).unwrap(), d);
        assert_eq!(dumped_files(&dir).unwrap(), vec![path.clone()]);
        std::fs::write(&path, r#"{"strategy": "x"}"#).unwrap();
        assert!(matches!(Dumped::read(&path), Err(DumpError::Format { .. })));
        let mut bad = d.to_json();
        bad["choice"] = json!([5, 0]);
        std::fs::write(&path, bad.to_string()).unwrap();
        let e = Dumped::read(&path).unwrap_err();
        assert!(e.to_string().contains("a choice per chain"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
