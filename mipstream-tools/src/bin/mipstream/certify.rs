//! `mipstream certify DIR`: each plan `mipstream bench --dump-plans DIR`
//! wrote, solved exactly ([`mipstream::plan::certify`]): the plan's error,
//! the LP value the certificate defines, the integer optimum (with the
//! fit's locks kept, and without them), and the gaps.

use mipstream::plan::certify::certify;
use mipstream_tools::bench::dump::{dumped_files, Dumped};
use serde_json::json;
use std::path::PathBuf;

/// Arguments of `mipstream certify`.
#[derive(Debug, clap::Args)]
pub(crate) struct CertifyArgs {
    /// A folder `mipstream bench --dump-plans` wrote.
    dir: PathBuf,
    /// Also write the results as JSON: `{"frames": [{"file", "strategy",
    /// "frame", "plan_error", "lp_value", "optimum", "proven",
    /// "reported_lp_gap", "lp_gap", "optimum_gap", "free_optimum",
    /// "free_optimum_gap", "plan_keeps_locks", "changes"}]}`, where
    /// `optimum` keeps the fit's locks (recently loaded states) and
    /// `free_optimum` drops them, and
    /// `changes` lists the chains the optimum puts in another state than
    /// the plan: `{"chain", "plan", "optimum", "resident", "locked"}`
    /// (state indices, cheapest 0).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Search nodes per frame before the optimum is reported unproven.
    #[arg(long, default_value_t = 20_000_000)]
    node_limit: u64,
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |x| format!("{:.3}%", 100.0 * x))
}

pub(crate) fn run(args: CertifyArgs) -> Result<(), String> {
    let files = dumped_files(&args.dir).map_err(|e| e.to_string())?;
    if files.is_empty() {
        return Err(format!(
            "{}: no dumped plans (run `mipstream bench --dump-plans {}` first)",
            args.dir.display(),
            args.dir.display()
        ));
    }
    println!(
        "{:<34} {:>13} {:>13} {:>13} {:>9} {:>9} {:>9} {:>9}",
        "plan", "plan error", "LP value", "optimum", "LP gap", "reported", "to opt.", "to free"
    );
    let mut frames = Vec::new();
    let (mut worst_opt, mut worst_diff, mut unproven) = (0.0f64, 0.0f64, 0);
    let (mut worst_free, mut broken) = (0.0f64, 0);
    for path in &files {
        let d = Dumped::read(path).map_err(|e| e.to_string())?;
        let c = certify(&d.problem, args.node_limit);
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mark = match (c.proven, c.plan_keeps_locks) {
            (true, true) => "",
            (false, true) => " (unproven)",
            (true, false) => " (breaks a lock)",
            (false, false) => " (unproven; breaks a lock)",
        };
        println!(
            "{:<34} {:>13.6} {:>13} {:>13} {:>9} {:>9} {:>9} {:>9}{mark}",
            name,
            c.plan_error,
            c.lp_value.map_or_else(|| "-".into(), |v| format!("{v:.6}")),
            c.optimum.map_or_else(|| "-".into(), |v| format!("{v:.6}")),
            pct(c.lp_gap()),
            pct(d.reported_lp_gap),
            pct(c.optimum_gap()),
            pct(c.free_optimum_gap()),
        );
        worst_opt = worst_opt.max(c.optimum_gap().unwrap_or(0.0));
        worst_free = worst_free.max(c.free_optimum_gap().unwrap_or(0.0));
        broken += usize::from(!c.plan_keeps_locks);
        if let (Some(a), Some(b)) = (c.lp_gap(), d.reported_lp_gap) {
            worst_diff = worst_diff.max((a - b).abs());
        }
        unproven += usize::from(!c.proven);
        let p = &d.problem;
        let changes: Vec<_> = (0..p.choice.len().min(c.optimum_choice.len()))
            .filter(|&i| p.choice[i] != c.optimum_choice[i])
            .map(|i| {
                json!({
                    "chain": i,
                    "plan": p.choice[i],
                    "optimum": c.optimum_choice[i],
                    "resident": p.resident.get(i),
                    "locked": p.locked.get(i),
                })
            })
            .collect();
        frames.push(json!({
            "file": name,
            "strategy": d.strategy,
            "frame": d.bench_frame,
            "plan_error": c.plan_error,
            "lp_value": c.lp_value,
            "optimum": c.optimum,
            "proven": c.proven,
            "nodes": c.nodes,
            "reported_lp_gap": d.reported_lp_gap,
            "lp_gap": c.lp_gap(),
            "optimum_gap": c.optimum_gap(),
            "free_optimum": c.free_optimum,
            "free_optimum_gap": c.free_optimum_gap(),
            "plan_keeps_locks": c.plan_keeps_locks,
            "changes": changes,
        }));
    }
    println!(
        "{} plans: the plan at most {} above the integer optimum (locks kept), at most {} above it without the locks; the reported LP gap within {} points of the exact one{}{}",
        files.len(),
        pct(Some(worst_opt)),
        pct(Some(worst_free)),
        format_args!("{:.3}", 100.0 * worst_diff),
        if unproven > 0 {
            format!("; {unproven} optimum(s) not proven within --node-limit")
        } else {
            String::new()
        },
        if broken > 0 {
            format!("; {broken} plan(s) break a lock")
        } else {
            String::new()
        }
    );
    if let Some(path) = &args.json {
        let text = json!({ "frames": frames }).to_string();
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
