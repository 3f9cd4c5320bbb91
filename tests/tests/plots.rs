//! Plots (`fabricsim run --plots`, `fabricsim plot DIR`): the SVG files are parsed and
//! checked for their elements, axis labels and values in range; the time-series figures are
//! drawn from Parquet as from CSV; the PNG files decode, have twice the SVG's size, show the
//! figure and its text, and are the same bytes run after run.

use fabricsim_tests::{catalogue, fabricsim, s};
use std::path::Path;

/// A parsed SVG's texts, polylines (as point lists) and circle count.
struct Svg {
    texts: Vec<String>,
    lines: Vec<Vec<(f64, f64)>>,
    circles: usize,
    size: (f64, f64),
}

fn parse(path: &Path) -> Svg {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let dim = |a: &str| root.attribute(a).unwrap().parse::<f64>().unwrap();
    let mut svg = Svg {
        texts: Vec::new(),
        lines: Vec::new(),
        circles: 0,
        size: (dim("width"), dim("height")),
    };
    for n in doc.descendants() {
        match n.tag_name().name() {
            "text" => svg.texts.push(n.text().unwrap_or_default().trim().to_owned()),
            "polyline" => {
                let pts = n.attribute("points").unwrap_or_default();
                svg.lines.push(
                    pts.split_whitespace()
                        .map(|p| {
                            let (x, y) = p.split_once(',').unwrap();
                            (x.parse().unwrap(), y.parse().unwrap())
                        })
                        .collect(),
                );
            }
            "circle" => svg.circles += 1,
            _ => {}
        }
    }
    svg
}

/// Numeric tick labels of a chart.
fn numbers(svg: &Svg) -> Vec<f64> {
    svg.texts
        .iter()
        .filter_map(|t| {
            let (v, mult) = match t.chars().last() {
                Some('k') => (&t[..t.len() - 1], 1e3),
                Some('M') => (&t[..t.len() - 1], 1e6),
                Some('G') => (&t[..t.len() - 1], 1e9),
                _ => (t.as_str(), 1.0),
            };
            v.parse::<f64>().ok().map(|x| x * mult)
        })
        .collect()
}

/// The data lines: polylines with more than the two points of a grid line or legend mark,
/// or any polyline whose points are not axis-aligned.
fn data_lines(svg: &Svg) -> Vec<&Vec<(f64, f64)>> {
    svg.lines
        .iter()
        .filter(|l| l.len() > 2 || (l.len() == 2 && l[0].0 != l[1].0 && l[0].1 != l[1].1))
        .collect()
}

fn with_output(toml: &str, output: &str) -> String {
    toml.replacen("[run]", &format!("[output]\n{output}\n\n[run]"), 1)
}

/// `roce_victim_flow` sampled every 20 us, run with `--plots` and `extra` arguments into
/// `dir/out`: the scenario's path, the results directory and the run's stdout.
fn victim_with_plots(dir: &Path, extra: &[&str]) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let text = std::fs::read_to_string(catalogue("roce_victim_flow.toml")).unwrap();
    let path = dir.join("v.toml");
    std::fs::write(&path, with_output(&text, "sample = \"20us\"")).unwrap();
    let out = dir.join("out");
    let mut args = vec!["run", s(&path), "--out", s(&out), "--plots"];
    args.extend_from_slice(extra);
    let o = fabricsim(&args);
    assert_eq!(o.code, 0, "{o:?}");
    (path, out, o.stdout)
}

#[test]
fn run_with_plots_draws_every_figure_with_labelled_axes_and_values_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let (_, out, stdout) = victim_with_plots(dir.path(), &[]);
    assert!(stdout.contains("plots: 7 files in"), "{stdout}");
    // The time-series figures below are drawn from the Parquet files (the default format).
    assert!(out.join("timeseries_ports.parquet").exists() && !out.join("timeseries_ports.csv").exists());
    let plots = out.join("plots");
    assert!(!plots.join("fct_cdf.png").exists(), "SVG only by default");
    for (file, title, x, y) in [
        (
            "fct_cdf.svg",
            "Flow completion time CDF",
            "FCT (us, log scale)",
            "fraction of completed flows",
        ),
        (
            "latency_cdf.svg",
            "Packet latency CDF",
            "packet latency (us, log scale)",
            "fraction of delivered packets",
        ),
        (
            "slowdown_by_size.svg",
            "FCT slowdown by flow size",
            "flow size, bucket's largest (bytes, log scale)",
            "FCT / ideal FCT",
        ),
        (
            "queue_hotspots.svg",
            "Queue of the top hotspot ports (mean over each window)",
            "time (us)",
            "queue (KiB)",
        ),
        (
            "util_hotspots.svg",
            "Utilisation of the top hotspot ports (per window)",
            "time (us)",
            "utilisation (%)",
        ),
        (
            "flow_rates.svg",
            "Congestion-control rate of the first flows",
            "time (us)",
            "rate (Gb/s)",
        ),
    ] {
        let svg = parse(&plots.join(file));
        for label in [title, x, y] {
            assert!(
                svg.texts.iter().any(|t| t == label),
                "{file}: no text {label:?} in {:?}",
                svg.texts
            );
        }
        let lines = data_lines(&svg);
        // A line of several points, or markers (one bucket: one point per quantile).
        assert!(!lines.is_empty() || svg.circles > 0, "{file}: no data drawn");
        for l in &lines {
            assert!(
                l.iter()
                    .all(|&(px, py)| (0.0..=svg.size.0).contains(&px) && (0.0..=svg.size.1).contains(&py)),
                "{file}: a point outside the picture"
            );
        }
        assert!(numbers(&svg).len() >= 4, "{file}: too few tick labels {:?}", svg.texts);
    }
    // CDFs run from 0 to 1 on their y axis; utilisation from 0 to 100 %.
    let cdf = numbers(&parse(&plots.join("fct_cdf.svg")));
    assert!(cdf.contains(&1.0) && cdf.contains(&0.0), "{cdf:?}");
    let util = parse(&plots.join("util_hotspots.svg"));
    let ticks = numbers(&util);
    assert!(ticks.contains(&100.0) && ticks.contains(&0.0), "{ticks:?}");
    // One legend entry per hotspot port recorded (its link name and port id).
    let hot = util.texts.iter().filter(|t| t.contains("(port ")).count();
    assert!((1..=8).contains(&hot), "{:?}", util.texts);
    // Both groups of the scenario are in the FCT CDF's legend.
    let fct = parse(&plots.join("fct_cdf.svg"));
    assert!(
        fct.texts.iter().any(|t| t.starts_with("hotspot (8 flows)")),
        "{:?}",
        fct.texts
    );
    assert!(
        fct.texts.iter().any(|t| t.starts_with("victim (1 flows)")),
        "{:?}",
        fct.texts
    );
    // The single slowdown bucket is visible: one marker per quantile.
    assert!(parse(&plots.join("slowdown_by_size.svg")).circles >= 3);

    // `fabricsim plot DIR` redraws the same bytes.
    let before = std::fs::read(plots.join("util_hotspots.svg")).unwrap();
    let o = fabricsim(&["plot", s(&out)]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.stdout.lines().count(), 7, "{}", o.stdout);
    assert_eq!(std::fs::read(plots.join("util_hotspots.svg")).unwrap(), before);
}

/// The time-series figures of a CSV run and of a Parquet run of the same scenario are the
/// same bytes: the Parquet files are read back to the same points.
#[test]
fn time_series_figures_are_the_same_from_parquet_and_from_csv() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(catalogue("roce_dcqcn_convergence.toml")).unwrap();
    let mut outs = Vec::new();
    for format in ["parquet", "csv"] {
        let path = dir.path().join(format!("{format}.toml"));
        let output = format!("sample = \"20us\"\nsample_format = \"{format}\"");
        std::fs::write(&path, with_output(&text, &output)).unwrap();
        let out = dir.path().join(format);
        let o = fabricsim(&["run", s(&path), "--out", s(&out), "--plots"]);
        assert_eq!(o.code, 0, "{o:?}");
        assert!(out.join(format!("timeseries_flows.{format}")).exists());
        outs.push(out);
    }
    for f in ["queue_hotspots.svg", "util_hotspots.svg", "flow_rates.svg"] {
        let [a, b] = [&outs[0], &outs[1]].map(|o| std::fs::read(o.join("plots").join(f)).unwrap());
        assert!(
            parse(&outs[0].join("plots").join(f)).lines.len() > 2,
            "{f}: lines drawn"
        );
        assert_eq!(a, b, "{f}");
    }
}

/// A PNG's size and pixels (RGBA).
fn png(path: &Path) -> (u32, u32, Vec<[u8; 4]>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = png::Decoder::new(std::io::BufReader::new(file)).read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    assert_eq!(
        (info.color_type, info.bit_depth),
        (png::ColorType::Rgba, png::BitDepth::Eight)
    );
    let px = buf[..info.buffer_size()]
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    (info.width, info.height, px)
}

/// Pixels darker than mid-grey (text, axes, dark lines).
fn dark(px: &[[u8; 4]]) -> usize {
    px.iter()
        .filter(|p| u32::from(p[0]) + u32::from(p[1]) + u32::from(p[2]) < 3 * 128)
        .count()
}

/// Issue 13: `--plot-format both` writes a PNG beside each SVG: it decodes, is twice the
/// SVG's width and height, is opaque, is not blank (many colours, no single colour covering
/// it), its text is drawn (removing the SVG's `<text>` elements removes thousands of dark
/// pixels: the embedded font was found), and `fabricsim plot --plot-format png` redraws the
/// same bytes without writing SVG.
#[test]
fn png_figures_decode_at_twice_the_svg_size_with_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let (path, out, stdout) = victim_with_plots(dir.path(), &["--plot-format", "both"]);
    assert!(stdout.contains("plots: 14 files in"), "{stdout}");
    let plots = out.join("plots");
    let mut pngs = Vec::new();
    for e in std::fs::read_dir(&plots).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "svg") {
            pngs.push(p.with_extension("png"));
        }
    }
    pngs.sort();
    assert_eq!(pngs.len(), 7);
    for p in &pngs {
        let svg_path = p.with_extension("svg");
        let svg = parse(&svg_path);
        let (w, h, px) = png(p);
        assert_eq!(
            (f64::from(w), f64::from(h)),
            (2.0 * svg.size.0, 2.0 * svg.size.1),
            "{}",
            p.display()
        );
        assert!(px.iter().all(|c| c[3] == 255), "{}: opaque", p.display());
        let mut colours: std::collections::BTreeMap<[u8; 4], usize> = Default::default();
        for c in &px {
            *colours.entry(*c).or_default() += 1;
        }
        let most = colours.values().max().unwrap();
        assert!(colours.len() > 50, "{}: {} colours", p.display(), colours.len());
        assert!(*most < px.len() * 99 / 100, "{}: one colour covers it", p.display());
        // The same SVG without its text draws far fewer dark pixels.
        let source = std::fs::read_to_string(&svg_path).unwrap();
        let mut bare = String::new();
        let mut rest = source.as_str();
        while let Some(i) = rest.find("<text") {
            bare.push_str(&rest[..i]);
            let j = rest[i..].find("</text>").unwrap() + i + "</text>".len();
            rest = &rest[j..];
        }
        bare.push_str(rest);
        assert!(bare.len() < source.len(), "{}: has text", p.display());
        let bare_png = dir.path().join("bare.png");
        std::fs::write(&bare_png, scenarios::plots::png::png(&bare).unwrap()).unwrap();
        let (with, without) = (dark(&px), dark(&png(&bare_png).2));
        assert!(
            with > without + 2000,
            "{}: text pixels {with} vs {without}",
            p.display()
        );
    }
    // Redrawn as PNG only: the same bytes.
    let before: Vec<Vec<u8>> = pngs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let replot = dir.path().join("replot");
    std::fs::create_dir(&replot).unwrap();
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() {
            std::fs::copy(&f, replot.join(f.file_name().unwrap())).unwrap();
        }
    }
    let o = fabricsim(&["plot", s(&replot), "--plot-format", "png"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(o.stdout.lines().count(), 7, "{}", o.stdout);
    for (p, b) in pngs.iter().zip(&before) {
        let again = replot.join("plots").join(p.file_name().unwrap());
        assert_eq!(&std::fs::read(&again).unwrap(), b, "{}", again.display());
        assert!(!again.with_extension("svg").exists());
    }
    // `--plot-format` belongs to `--plots`.
    let o = fabricsim(&["run", s(&path), "--out", s(&out), "--plot-format", "png"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("--plots"), "{o:?}");
}

#[test]
fn busbw_is_plotted_against_message_size() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = fabricsim(&[
        "run",
        s(&catalogue("allreduce8_nvlink_ring.toml")),
        "--out",
        s(&out),
        "--plots",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let svg = parse(&out.join("plots/busbw.svg"));
    assert!(svg.texts.iter().any(|t| t == "busbw (GB/s)"));
    assert!(svg.texts.iter().any(|t| t == "message size (bytes, log scale)"));
    let lines = data_lines(&svg);
    assert!(!lines.is_empty());
    // busbw grows with message size on a ring: the line rises left to right (SVG y down).
    let l = lines.iter().max_by_key(|l| l.len()).unwrap();
    assert!(l.first().unwrap().1 > l.last().unwrap().1, "{l:?}");
    // No time series were asked for: no queue plot.
    assert!(!out.join("plots/queue_hotspots.svg").exists());
}

#[test]
fn plot_refuses_a_directory_that_is_not_a_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let o = fabricsim(&["plot", s(dir.path())]);
    assert_eq!(o.code, 1, "{o:?}");
    assert!(o.stderr.contains("not a fabricsim results directory"), "{}", o.stderr);
    assert!(!dir.path().join("plots").exists());
}

/// Colours of the stroked lines of an SVG (`stroke="#rrggbb"`), with their widths.
fn strokes(path: &Path) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.tag_name().name() == "polyline")
        .filter_map(|n| {
            Some((
                n.attribute("stroke")?.to_owned(),
                n.attribute("stroke-width").and_then(|w| w.parse().ok()).unwrap_or(1.0),
            ))
        })
        .collect()
}

/// The hotspot map: one box per node on small fabrics, the levels named, links coloured by
/// utilisation (a hot link is red), thick where they dropped, and the pause tree as arrows.
#[test]
fn hotspot_map_shows_levels_hot_links_drops_and_the_pause_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = fabricsim(&[
        "run",
        s(&catalogue("roce_victim_flow.toml")),
        "--out",
        s(&out),
        "--plots",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let map = out.join("plots/hotspot_map.svg");
    let svg = parse(&map);
    assert!(svg.texts.iter().any(|t| t == "endpoints"), "{:?}", svg.texts);
    assert!(svg.texts.iter().any(|t| t == "switches, tier 0"));
    assert!(svg.texts.iter().any(|t| t == "switches, tier 1"));
    assert!(svg.texts.iter().any(|t| t == "Hotspot map: roce_victim_flow"));
    // 20 hosts, 4 leaves, 1 spine: one box each (plus the background).
    let text = std::fs::read_to_string(&map).unwrap();
    assert_eq!(text.matches("<rect").count(), 1 + 25);
    let st = strokes(&map);
    // 24 links drawn; the congested spine -> leaf1 downlink is red-hot (utilisation ~1).
    let reds = st
        .iter()
        .filter(|(c, _)| c.starts_with("#DC") || c.starts_with("#dc"))
        .count();
    assert!(reds >= 1, "{st:?}");
    // Pause tree arrows in blue.
    let blue = st.iter().filter(|(c, _)| c.eq_ignore_ascii_case("#1E50DC")).count();
    assert!(blue >= 4, "{st:?}");

    // Drops: thick links on the lossy base fabric (the incast's receiver port).
    let out2 = dir.path().join("q");
    let o = fabricsim(&["run", s(&catalogue("incast_16to1.toml")), "--out", s(&out2), "--plots"]);
    assert_eq!(o.code, 0, "{o:?}");
    let st = strokes(&out2.join("plots/hotspot_map.svg"));
    assert!(st.iter().any(|(_, w)| *w >= 5.0), "{st:?}");
}

/// At scale the levels are aggregated into boxes: a 16-server cluster (128 GPUs, hundreds of
/// devices inside the servers) draws at most 32 boxes a level.
#[test]
fn hotspot_map_aggregates_large_levels() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = fabricsim(&[
        "run",
        s(&catalogue("cluster16_hgx_roce400_allreduce.toml")),
        "--out",
        s(&out),
        "--plots",
    ]);
    assert_eq!(o.code, 0, "{o:?}");
    let text = std::fs::read_to_string(out.join("plots/hotspot_map.svg")).unwrap();
    let rects = text.matches("<rect").count() - 1;
    assert!(rects <= 32 * 5, "{rects} boxes");
    assert!(rects >= 32 * 2, "{rects} boxes");
    assert!(
        parse(&out.join("plots/hotspot_map.svg"))
            .texts
            .iter()
            .any(|t| t == "inside servers")
    );
}
