//! The viewer in a real winit window on a virtual X display (`Xvfb`): it
//! opens, presents a few frames through the surface and writes a screenshot.
//! Runs without the test harness, because winit wants the main thread.
//! Needs `Xvfb` (Debian package `xvfb`); missing it is a failure, not a skip.

use mipstream_tools::viewer::{run_window, ViewerOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Xvfb(Child);

impl Drop for Xvfb {
    fn drop(&mut self) {
        // SIGTERM, so Xvfb removes its socket and lock file (a SIGKILL left
        // them behind, and after a few dozen runs no display number was free)
        let terminated = Command::new("kill")
            .arg(self.0.id().to_string())
            .status()
            .is_ok_and(|s| s.success());
        let started = Instant::now();
        while terminated && started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether display `n` is held by a live X server: its lock file names a
/// running process. A socket and lock left by a killed server are removed.
fn display_in_use(n: u32) -> bool {
    let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
    let lock = PathBuf::from(format!("/tmp/.X{n}-lock"));
    let pid = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    match pid {
        Some(pid) if Path::new(&format!("/proc/{pid}")).exists() => true,
        Some(_) => {
            // stale: removing fails harmlessly if it belongs to another user
            let _ = std::fs::remove_file(&lock);
            let _ = std::fs::remove_file(&socket);
            socket.exists() || lock.exists()
        }
        None => socket.exists() || lock.exists(),
    }
}

/// Starts Xvfb on the first free display from :91; returns it and the display.
fn start_xvfb() -> (Xvfb, String) {
    for n in 91..120 {
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        if display_in_use(n) {
            continue;
        }
        let child = Command::new("Xvfb")
            .args([
                &format!(":{n}"),
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start Xvfb ({e}): install it with `apt-get install xvfb`")
            });
        let mut x = Xvfb(child);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if socket.exists() {
                return (x, format!(":{n}"));
            }
            if let Ok(Some(status)) = x.0.try_wait() {
                panic!("Xvfb :{n} exited at start: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("Xvfb :{n} did not create its socket in 20 s");
    }
    panic!("no free X display number between :91 and :119");
}

fn main() {
    // `cargo test -- --list` and filters: this file has one test
    if std::env::args().any(|a| a == "--list") {
        println!("viewer_window: test");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (xvfb, display) = start_xvfb();
    std::env::set_var("DISPLAY", &display);
    std::env::remove_var("WAYLAND_DISPLAY");
    let out = repo.join("target/test-output/viewer-window.png");
    let _ = std::fs::remove_file(&out);
    let options = ViewerOptions {
        size: glam::UVec2::new(960, 540),
        frames: 8,
        screenshot: Some(out.clone()),
        cache_dir: repo.join("target/mipstream-cache"),
        ..Default::default()
    };
    let started = Instant::now();
    let summary = run_window(&options);
    drop(xvfb);
    let summary = summary.unwrap_or_else(|e| panic!("the viewer window failed on {display}: {e}"));
    println!("{summary} in {:.1?}", started.elapsed());
    assert_eq!(summary.frames, 8);
    assert_eq!(summary.over_budget_frames, 0);
    let img = image::open(&out)
        .unwrap_or_else(|e| panic!("screenshot {}: {e}", out.display()))
        .to_rgba8();
    assert_eq!(img.dimensions(), (960, 540), "the frame matches the window");
    // the panel (dark) and the scene (sky, ground) are both there
    let dark = img
        .pixels()
        .filter(|p| p.0[..3].iter().all(|&c| c < 40))
        .count();
    let scene = img
        .pixels()
        .filter(|p| p.0[..3].iter().any(|&c| c > 90))
        .count();
    let n = (960 * 540) as usize;
    assert!(dark > n / 5, "panel pixels: {dark} of {n}");
    assert!(scene > n / 4, "bright scene pixels: {scene} of {n}");
    println!("test viewer_window ... ok");
}
