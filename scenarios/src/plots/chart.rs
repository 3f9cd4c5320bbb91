//! Line charts as SVG text, drawn with `plotters` (SVG backend only, its built-in font
//! metrics: no font files, no system libraries). Deterministic: the same data give the
//! same bytes.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// One line of a chart: its legend name, its points and, optionally, vertical error bars
/// `(x, low, high)` drawn in the line's colour (e.g. a 95% confidence interval).
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub bars: Vec<(f64, f64, f64)>,
}

impl Series {
    /// A line without error bars.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            bars: Vec::new(),
        }
    }
}

/// A line chart's text and axes. `x_log`: the x axis is logarithmic (the values must be
/// above 0; others are left out).
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub x_log: bool,
    /// Fixed y range; `None`: from the data (starting at 0 for non-negative data).
    pub y_range: Option<(f64, f64)>,
    /// Tick marks at these x values (data units) with these labels, instead of plotters'
    /// own; labels that would overlap their left neighbour are left out. The x range is
    /// padded so the first and last points are not on the frame.
    pub x_ticks: Option<Vec<(f64, String)>>,
}

/// Series with at most this many points get a marker at each point.
const MAX_MARKED: usize = 50;

/// Legend rows at most; further series are drawn without a legend entry.
const MAX_LEGEND: usize = 12;

/// Line colours, dark enough to read on white (Palette99's yellow, cyan and lime are not);
/// further series take Palette99's.
const COLOURS: [(u8, u8, u8); 10] = [
    (230, 25, 75),
    (60, 180, 75),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (0, 128, 128),
    (240, 50, 230),
    (170, 110, 40),
    (0, 0, 128),
    (128, 128, 0),
];

fn colour(i: usize) -> RGBAColor {
    COLOURS.get(i).map_or_else(
        || Palette99::pick(i).to_rgba(),
        |&(r, g, b)| RGBColor(r, g, b).to_rgba(),
    )
}

/// Chart size in pixels, and the parts of it around the plotting area.
const WIDTH: u32 = 800;
const HEIGHT: u32 = 480;
const MARGIN: u32 = 15;
const Y_LABEL_AREA: u32 = 70;
/// Estimated width of one character of a tick or legend label (12-px sans-serif), pixels.
const CHAR_PX: f64 = 7.0;

/// Draws `series` as an 800 x 480 SVG. `Err` only when plotters fails to draw.
pub fn line_chart(c: &Chart<'_>, series: &[Series]) -> Result<String, String> {
    let tx = |x: f64| if c.x_log { x.log10() } else { x };
    let keep = |x: f64| x.is_finite() && (!c.x_log || x > 0.0);
    let pts: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|p| keep(p.0) && p.1.is_finite())
                .map(|&(x, y)| (tx(x), y))
                .collect()
        })
        .collect();
    let bars: Vec<Vec<(f64, f64, f64)>> = series
        .iter()
        .map(|s| {
            s.bars
                .iter()
                .filter(|b| keep(b.0) && b.1.is_finite() && b.2.is_finite())
                .map(|&(x, lo, hi)| (tx(x), lo, hi))
                .collect()
        })
        .collect();
    let ticks: Option<Vec<(f64, &str)>> = c.x_ticks.as_ref().map(|t| {
        t.iter()
            .filter(|t| keep(t.0))
            .map(|(x, l)| (tx(*x), l.as_str()))
            .collect()
    });
    let xs = pts
        .iter()
        .flatten()
        .map(|p| p.0)
        .chain(bars.iter().flatten().map(|b| b.0));
    let xs = xs.chain(ticks.iter().flatten().map(|t| t.0));
    let (mut x0, mut x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let ys = pts.iter().flatten().map(|p| (p.1, p.1));
    let ys = ys.chain(bars.iter().flatten().map(|b| (b.1.min(b.2), b.1.max(b.2))));
    let (mut y0, mut y1) = c
        .y_range
        .unwrap_or_else(|| ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y.0), b.max(y.1))));
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if y0 > y1 {
        (y0, y1) = (0.0, 1.0);
    }
    if c.y_range.is_none() && y0 >= 0.0 {
        y0 = 0.0;
        y1 *= 1.05;
    }
    if x1 - x0 < 1e-12 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    } else if let Some(t) = &ticks {
        // Room at each end for half the end label beyond the frame (the y labels' area on
        // the left, the margin on the right), at least 5 % of the width.
        let width = f64::from(WIDTH - 2 * MARGIN - Y_LABEL_AREA);
        let half = |x: f64| {
            t.iter()
                .find(|t| t.0 == x)
                .map_or(0.0, |t| t.1.chars().count() as f64 * CHAR_PX / 2.0)
        };
        let left = ((half(x0) - f64::from(Y_LABEL_AREA) + 10.0) / width).clamp(0.05, 0.3);
        let right = ((half(x1) - f64::from(MARGIN) + 5.0) / width).clamp(0.05, 0.3);
        let total = (x1 - x0) / (1.0 - left - right);
        (x0, x1) = (x0 - left * total, x1 + right * total);
    }
    if y1 - y0 < 1e-12 {
        y1 = y0 + 1.0;
    }
    if c.y_range.is_none() {
        y1 = with_legend_room(series, &pts, (x0, x1), (y0, y1));
    }
    let data = Data {
        series,
        pts: &pts,
        bars: &bars,
    };
    match ticks {
        None if c.x_log && log_ticks(x0, x1).len() >= 2 => {
            // Ticks at 1, 2, 5 x powers of ten (only the powers when they are many).
            let labels: Vec<(f64, String)> = log_ticks(x0, x1).into_iter().map(|(v, x)| (v, short(x))).collect();
            let t: Vec<(f64, &str)> = labels.iter().map(|(v, l)| (*v, l.as_str())).collect();
            draw_ticked(c, &data, &t, (x0, x1), y0..y1)
        }
        None => {
            let x_fmt = |v: &f64| short(if c.x_log { 10f64.powf(*v) } else { *v });
            draw(c, &data, x0..x1, y0..y1, &x_fmt)
        }
        Some(t) => draw_ticked(c, &data, &t, (x0, x1), y0..y1),
    }
}

/// Draws with an x axis ticked at `ticks` (transformed x, label), those that fit.
fn draw_ticked(
    c: &Chart<'_>,
    data: &Data<'_>,
    ticks: &[(f64, &str)],
    (x0, x1): (f64, f64),
    y: std::ops::Range<f64>,
) -> Result<String, String> {
    let shown = thin_ticks(ticks, (x0, x1));
    let x_fmt = |v: &f64| {
        shown
            .iter()
            .find(|t| t.0 == *v)
            .map_or_else(String::new, |t| t.1.to_owned())
    };
    let axis = Ticked {
        inner: (x0..x1).into(),
        keys: shown.iter().map(|t| t.0).collect(),
    };
    draw(c, data, axis, y, &x_fmt)
}

/// An f64 axis with tick marks (and grid lines) at given values only.
struct Ticked {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl Ranged for Ticked {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// Ticks (log10 of the value, the value) within `[lo, hi]` (log10 too): 1, 2 and 5 times each
/// power of ten, or the powers alone when the range spans more than three of them.
fn log_ticks(lo: f64, hi: f64) -> Vec<(f64, f64)> {
    let (first, last) = (lo.floor() as i32, hi.ceil() as i32);
    let mults: &[f64] = if last - first > 3 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut out = Vec::new();
    for e in first..=last {
        for m in mults {
            let x = m * 10f64.powi(e);
            let v = x.log10();
            if v >= lo - 1e-9 && v <= hi + 1e-9 {
                out.push((v, x));
            }
        }
    }
    out
}

/// The ticks whose labels fit: left to right, a label is kept when it starts clear of the
/// last kept one's end (widths estimated at `CHAR_PX` per character).
fn thin_ticks<'t>(ticks: &[(f64, &'t str)], (x0, x1): (f64, f64)) -> Vec<(f64, &'t str)> {
    let width = f64::from(WIDTH - 2 * MARGIN - Y_LABEL_AREA);
    let mut sorted = ticks.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut shown: Vec<(f64, &str)> = Vec::new();
    let mut right = f64::MIN;
    for (x, label) in sorted {
        let px = (x - x0) / (x1 - x0) * width;
        let half = label.chars().count() as f64 * CHAR_PX / 2.0;
        if px - half >= right + CHAR_PX {
            shown.push((x, label));
            right = px + half;
        }
    }
    shown
}

/// The series and their points after the x transform.
struct Data<'s> {
    series: &'s [Series],
    pts: &'s [Vec<(f64, f64)>],
    bars: &'s [Vec<(f64, f64, f64)>],
}

fn draw<X>(
    c: &Chart<'_>,
    d: &Data<'_>,
    x: X,
    y: std::ops::Range<f64>,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<String, String>
where
    X: plotters::coord::ranged1d::AsRangedCoord<Value = f64>,
    X::CoordDescType: plotters::coord::ranged1d::ValueFormatter<f64>,
{
    let mut svg = String::new();
    {
        let err = |e: &dyn std::fmt::Display| format!("cannot draw \"{}\": {e}", c.title);
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 20))
            .margin(MARGIN)
            .x_label_area_size(45)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(x, y)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .x_label_formatter(x_fmt)
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(|e| err(&e))?;
        // Pixels the data cover (points, segments sampled, bars), for the legend's corner.
        let mut covered: Vec<(i32, i32)> = Vec::new();
        let with_bars = d.bars.iter().filter(|b| !b.is_empty()).count().max(1);
        for (i, (s, p)) in d.series.iter().zip(d.pts).enumerate() {
            let color = colour(i);
            // Markers first, where there are few points (a single bucket or flow is visible).
            if p.len() <= MAX_MARKED {
                chart
                    .draw_series(p.iter().map(|&xy| Circle::new(xy, 3, color.filled())))
                    .map_err(|e| err(&e))?;
            }
            // Bars of different series at one x are set a few pixels apart (dodged).
            let dx = (2 * i as i32 - (with_bars as i32 - 1)) * 2;
            for &(bx, lo, hi) in &d.bars[i] {
                let (plo, phi) = (chart.backend_coord(&(bx, lo)), chart.backend_coord(&(bx, hi)));
                let dy = phi.1 - plo.1;
                let bar = EmptyElement::at((bx, lo))
                    + PathElement::new(vec![(dx, 0), (dx, dy)], color)
                    + PathElement::new(vec![(dx - 4, 0), (dx + 4, 0)], color)
                    + PathElement::new(vec![(dx - 4, dy), (dx + 4, dy)], color);
                chart.draw_series([bar]).map_err(|e| err(&e))?;
                covered.extend([plo, phi]);
            }
            let drawn = chart
                .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))
                .map_err(|e| err(&e))?;
            if i < MAX_LEGEND {
                drawn
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            }
            covered.extend(
                sampled(std::slice::from_ref(p))
                    .iter()
                    .map(|xy| chart.backend_coord(xy)),
            );
        }
        let labels: Vec<&str> = d.series.iter().take(MAX_LEGEND).map(|s| s.name.as_str()).collect();
        if labels.iter().any(|l| !l.is_empty()) {
            let (xr, yr) = chart.plotting_area().get_pixel_range();
            chart
                .configure_series_labels()
                .position(legend_corner(&labels, (xr, yr), &covered).0)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .draw()
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

/// The plotting area's pixels within the 800 x 480 chart (left, top, right, bottom), as
/// plotters lays it out with the margins, label areas and caption above.
const PLOT_AREA_PX: (i32, i32, i32, i32) = (85, 41, 785, 420);

/// The y top that leaves room for the legend above the data when every corner of the
/// plotting area would put the legend over drawn points (estimated with `PLOT_AREA_PX`).
fn with_legend_room(series: &[Series], pts: &[Vec<(f64, f64)>], (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> f64 {
    let labels: Vec<&str> = series.iter().take(MAX_LEGEND).map(|s| s.name.as_str()).collect();
    if labels.iter().all(|l| l.is_empty()) {
        return y1;
    }
    let (l, t, r, b) = PLOT_AREA_PX;
    let px = |(x, y): (f64, f64)| {
        (
            l + ((x - x0) / (x1 - x0) * f64::from(r - l)) as i32,
            t + ((y1 - y) / (y1 - y0) * f64::from(b - t)) as i32,
        )
    };
    let covered = sampled(pts).into_iter().map(px).collect::<Vec<_>>();
    let (_, n, h) = legend_corner(&labels, (l..r, t..b), &covered);
    if n == 0 {
        return y1;
    }
    // The data keep the lower (height - legend) of the area.
    let free = f64::from(b - t - h - 10).max(f64::from(b - t) / 3.0);
    y0 + (y1 - y0) * f64::from(b - t) / free
}

/// The points of the lines and 8 samples along each segment, in data coordinates.
fn sampled(pts: &[Vec<(f64, f64)>]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for p in pts {
        out.extend(p.iter().copied());
        for w in p.windows(2) {
            for k in 1..8 {
                let f = f64::from(k) / 8.0;
                out.push((w[0].0 + (w[1].0 - w[0].0) * f, w[0].1 + (w[1].1 - w[0].1) * f));
            }
        }
    }
    out
}

/// The corner of the plotting area where a legend of `labels` covers the fewest drawn
/// pixels (`covered`); upper left on a tie. Also the number covered there and the legend's
/// estimated height.
fn legend_corner(
    labels: &[&str],
    (xr, yr): (std::ops::Range<i32>, std::ops::Range<i32>),
    covered: &[(i32, i32)],
) -> (SeriesLabelPosition, usize, i32) {
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    let w = (chars * CHAR_PX) as i32 + 50 + 10;
    let h = labels.len() as i32 * 15 + 20 + 10;
    let corners = [
        (SeriesLabelPosition::UpperLeft, xr.start, yr.start),
        (SeriesLabelPosition::UpperRight, xr.end - w, yr.start),
        (SeriesLabelPosition::LowerRight, xr.end - w, yr.end - h),
        (SeriesLabelPosition::LowerLeft, xr.start, yr.end - h),
    ];
    let mut best = (usize::MAX, SeriesLabelPosition::UpperLeft);
    for (pos, x, y) in corners {
        let n = covered
            .iter()
            .filter(|p| p.0 >= x && p.0 <= x + w && p.1 >= y && p.1 <= y + h)
            .count();
        if n < best.0 {
            best = (n, pos);
        }
    }
    (best.1, best.0, h)
}

/// A tick label: few digits, SI suffix for large values.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9).replace(".000", "")
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6).replace(".000", "")
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3).replace(".0k", "k")
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_is_svg_with_its_labels_and_one_path_per_series() {
        let c = Chart {
            title: "t",
            x_label: "x (us)",
            y_label: "y",
            x_log: true,
            y_range: Some((0.0, 1.0)),
            x_ticks: None,
        };
        let s = [Series::new(
            "a",
            vec![(1.0, 0.1), (10.0, 0.5), (100.0, 1.0), (-1.0, 0.3)],
        )];
        let svg = line_chart(&c, &s).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("x (us)") && svg.contains("<text"));
        assert_eq!(line_chart(&c, &s).unwrap(), svg, "deterministic");
        assert_eq!(short(12_500.0), "12.5k");
        assert_eq!(short(0.25), "0.250");
    }
}
