//! What an experiment hands back: a table (CSV and Markdown), a plot (SVG, drawn here with no
//! plotting dependency), the targets with their measured values, and notes.

use std::fmt::Write as _;

/// A table of strings with a header.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// As CSV (fields with commas or quotes are quoted).
    pub fn csv(&self) -> String {
        let field = |s: &String| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.clone()
            }
        };
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            out += &r.iter().map(field).collect::<Vec<_>>().join(",");
            out.push('\n');
        }
        out
    }

    /// As a Markdown table.
    pub fn markdown(&self) -> String {
        let mut out = format!("| {} |\n", self.header.join(" | "));
        out += &format!("|{}\n", "---|".repeat(self.header.len()));
        for r in &self.rows {
            out += &format!("| {} |\n", r.join(" | "));
        }
        out
    }
}

/// One line of a plot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Legend.
    pub name: String,
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
}

/// A line plot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plot {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis (points with x ≤ 0 are drawn at the left edge).
    pub log_x: bool,
    /// Lines.
    pub series: Vec<Series>,
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn nice(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 || v.abs() < 0.01 {
        format!("{v:.0e}")
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

impl Plot {
    /// The plot as an SVG document.
    pub fn svg(&self) -> String {
        let (w, h) = (760.0, 440.0);
        let (l, r, t, b) = (70.0, 190.0, 40.0, 50.0);
        let pts = self.series.iter().flat_map(|s| s.points.iter());
        let xs: Vec<f64> = pts
            .clone()
            .map(|p| p.0)
            .filter(|x| !self.log_x || *x > 0.0)
            .collect();
        let ys: Vec<f64> = pts.map(|p| p.1).filter(|y| y.is_finite()).collect();
        let fx = |x: f64| if self.log_x { x.log10() } else { x };
        let (mut x0, mut x1) = xs
            .iter()
            .map(|&x| fx(x))
            .fold((f64::INFINITY, f64::NEG_INFINITY), |a, x| {
                (a.0.min(x), a.1.max(x))
            });
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if self.log_x {
            // Room at the left for x = 0 points.
            x0 -= 1.0;
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let y1 = ys.iter().cloned().fold(0.0f64, f64::max).max(1e-9) * 1.1;
        let y0 = ys.iter().cloned().fold(0.0f64, f64::min).min(0.0);
        let px = |x: f64| {
            let v = if self.log_x && x <= 0.0 { x0 } else { fx(x) };
            l + (v - x0) / (x1 - x0) * (w - l - r)
        };
        let py = |y: f64| h - b - (y - y0) / (y1 - y0) * (h - t - b);
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
            (w - r + l) / 2.0,
            esc(&self.title)
        );
        let _ = writeln!(
            s,
            "<line x1=\"{l}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{l}\" y1=\"{t}\" x2=\"{l}\" y2=\"{}\" stroke=\"black\"/>",
            h - b,
            w - r,
            h - b,
            h - b
        );
        for i in 0..=5 {
            let y = y0 + (y1 - y0) * i as f64 / 5.0;
            let _ = writeln!(
                s,
                "<line x1=\"{l}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{4}</text>",
                py(y),
                w - r,
                l - 6.0,
                py(y) + 4.0,
                nice(y)
            );
        }
        for i in 0..=5 {
            let v = x0 + (x1 - x0) * i as f64 / 5.0;
            let label = if self.log_x {
                if i == 0 {
                    "0 / min".to_string()
                } else {
                    nice(10f64.powf(v))
                }
            } else {
                nice(v)
            };
            let x = l + (v - x0) / (x1 - x0) * (w - l - r);
            let _ = writeln!(
                s,
                "<text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                h - b + 16.0,
                esc(&label)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text transform=\"translate(16,{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            (w - r + l) / 2.0,
            h - 12.0,
            esc(&self.x_label),
            (h - b + t) / 2.0,
            esc(&self.y_label)
        );
        for (i, se) in self.series.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let path: Vec<String> = se
                .points
                .iter()
                .filter(|p| p.1.is_finite())
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>",
                path.join(" ")
            );
            for p in &path {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(s, "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{c}\"/>");
            }
            let ly = t + 10.0 + i as f64 * 18.0;
            let _ = writeln!(
                s,
                "<line x1=\"{0}\" y1=\"{ly}\" x2=\"{1}\" y2=\"{ly}\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{2}\" y=\"{3}\">{4}</text>",
                w - r + 10.0,
                w - r + 30.0,
                w - r + 36.0,
                ly + 4.0,
                esc(&se.name)
            );
        }
        s += "</svg>\n";
        s
    }
}

/// A target of the issue and whether this run met it.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The target.
    pub what: String,
    /// The measured value, in words.
    pub measured: String,
    /// Met.
    pub met: bool,
}

/// An experiment's outcome.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Short name (file stem).
    pub name: String,
    /// Title.
    pub title: String,
    /// Parameters in words.
    pub setup: Vec<String>,
    /// The main table.
    pub table: Table,
    /// The plot.
    pub plot: Plot,
    /// Targets.
    pub targets: Vec<Target>,
    /// Notes (limits, caveats).
    pub notes: Vec<String>,
    /// Packet events simulated.
    pub packet_events: u64,
    /// All events simulated.
    pub events: u64,
    /// Wall-clock seconds spent simulating (runs on several threads overlap).
    pub wall_s: f64,
    /// Runs simulated at once (`Options::jobs`, 1 with the RTL backend).
    pub threads: usize,
    /// Seconds each run took on its own thread, summed over the runs.
    pub thread_s: f64,
    /// Packet events and thread-seconds of the baseline runs alone (the fabric without the
    /// host library's cost).
    pub baseline_events_wall: (u64, f64),
    /// Bytes verified over all runs.
    pub bytes_verified: u64,
    /// Verification failures over all runs.
    pub verify_failed: u64,
}

impl Report {
    /// Adds the target every experiment shares: every byte verified, none failed.
    pub fn push_verified_target(&mut self) {
        self.targets.push(Target {
            what: "every byte verified".into(),
            measured: format!(
                "{} bytes verified, {} failures",
                self.bytes_verified, self.verify_failed
            ),
            met: self.verify_failed == 0,
        });
    }

    /// Packet events per wall-clock second.
    pub fn events_per_s(&self) -> f64 {
        self.packet_events as f64 / self.wall_s.max(1e-9)
    }

    /// The target lines, as printed.
    pub fn target_lines(&self) -> String {
        let mut s = String::new();
        for t in &self.targets {
            let _ = writeln!(
                s,
                "target {}: {} (measured {})",
                if t.met { "met" } else { "NOT met" },
                t.what,
                t.measured
            );
        }
        s
    }

    /// The whole report as Markdown.
    pub fn markdown(&self) -> String {
        let mut s = format!("# {}\n\n", self.title);
        for l in &self.setup {
            let _ = writeln!(s, "- {l}");
        }
        s.push('\n');
        s += &self.table.markdown();
        if !self.targets.is_empty() {
            s += "\n**Targets**\n\n";
            for t in &self.targets {
                let _ = writeln!(
                    s,
                    "- {} {}: measured {}",
                    if t.met { "met:" } else { "**NOT met**:" },
                    t.what,
                    t.measured
                );
            }
        }
        if !self.notes.is_empty() {
            s += "\n**Notes**\n\n";
            for n in &self.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        let _ = writeln!(
            s,
            "\nVerified: {} bytes, {} verification failures. Simulator: {} packet events ({} events) in {:.2} s wall-clock, {} run(s) at a time = {:.2} M packet events/s.",
            self.bytes_verified,
            self.verify_failed,
            self.packet_events,
            self.events,
            self.wall_s,
            self.threads.max(1),
            self.events_per_s() / 1e6
        );
        let (be, bw) = self.baseline_events_wall;
        if be > 0 {
            let _ = writeln!(
                s,
                "Per thread (each run's packet events over its own time): the RoCEv2 runs (fabric and baseline endpoints only) {be} packet events in {bw:.2} s = {:.2} M packet events/s; the ferroce runs {:.2} M packet events/s (the host library and the NIC model dominate them).",
                be as f64 / bw.max(1e-9) / 1e6,
                (self.packet_events - be) as f64 / (self.thread_s - bw).max(1e-9) / 1e6
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_svg() {
        let mut t = Table::new(&["a", "b"]);
        t.push(vec!["1".into(), "x,y".into()]);
        assert_eq!(t.csv(), "a,b\n1,\"x,y\"\n");
        assert!(t.markdown().contains("| 1 | x,y |"));
        let p = Plot {
            title: "t".into(),
            log_x: true,
            series: vec![Series {
                name: "s".into(),
                points: vec![(0.0, 1.0), (0.01, 0.5), (0.1, 0.2)],
            }],
            ..Default::default()
        };
        let svg = p.svg();
        assert!(svg.starts_with("<svg") && svg.contains("polyline") && svg.ends_with("</svg>\n"));
    }
}
