//! `mipstream certify DIR`: each plan `mipstream bench --dump-plans DIR`
//! wrote, solved exactly ([`mipstream::plan::certify`]): the plan's error,
//! the LP value the certificate defines, the integer optimum, and the gaps.

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
    /// "reported_lp_gap", "lp_gap", "optimum_gap"}]}`.
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
        "{:<34} {:>13} {:>13} {:>13} {:>9} {:>9} {:>9}",
        "plan", "plan error", "LP value", "optimum", "LP gap", "reported", "to opt."
    );
    let mut frames = Vec::new();
    let (mut worst_opt, mut worst_diff, mut unproven) = (0.0f64, 0.0f64, 0);
    for path in &files {
        let d = Dumped::read(path).map_err(|e| e.to_string())?;
        let c = certify(&d.problem, args.node_limit);
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mark = if c.proven { "" } else { " (unproven)" };
        println!(
            "{:<34} {:>13.6} {:>13} {:>13} {:>9} {:>9} {:>9}{mark}",
            name,
            c.plan_error,
            c.lp_value.map_or_else(|| "-".into(), |v| format!("{v:.6}")),
            c.optimum.map_or_else(|| "-".into(), |v| format!("{v:.6}")),
            pct(c.lp_gap()),
            pct(d.reported_lp_gap),
            pct(c.optimum_gap()),
        );
        worst_opt = worst_opt.max(c.optimum_gap().unwrap_or(0.0));
        if let (Some(a), Some(b)) = (c.lp_gap(), d.reported_lp_gap) {
            worst_diff = worst_diff.max((a - b).abs());
        }
        unproven += usize::from(!c.proven);
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
        }));
    }
    println!(
        "{} plans: the plan at most {} above the integer optimum; the reported LP gap within {} points of the exact one{}",
        files.len(),
        pct(Some(worst_opt)),
        format_args!("{:.3}", 100.0 * worst_diff),
        if unproven > 0 {
            format!("; {unproven} optimum(s) not proven within --node-limit")
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
