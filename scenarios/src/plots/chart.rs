//! Line charts as SVG text, drawn with `plotters` (SVG backend only, its built-in font
//! metrics: no font files, no system libraries). Deterministic: the same data give the
//! same bytes.

use plotters::prelude::*;

/// One line of a chart: its legend name and its points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
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
}

/// Series with at most this many points get a marker at each point.
const MAX_MARKED: usize = 50;

/// Legend rows at most; further series are drawn without a legend entry.
const MAX_LEGEND: usize = 12;

/// Draws `series` as an 800 x 480 SVG. `Err` only when plotters fails to draw.
pub fn line_chart(c: &Chart<'_>, series: &[Series]) -> Result<String, String> {
    let tx = |x: f64| if c.x_log { x.log10() } else { x };
    let pts: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|p| p.0.is_finite() && p.1.is_finite() && (!c.x_log || p.0 > 0.0))
                .map(|&(x, y)| (tx(x), y))
                .collect()
        })
        .collect();
    let all = || pts.iter().flatten();
    let (mut x0, mut x1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (mut y0, mut y1) = c
        .y_range
        .unwrap_or_else(|| all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1))));
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
    }
    if y1 - y0 < 1e-12 {
        y1 = y0 + 1.0;
    }
    let mut svg = String::new();
    {
        let err = |e: &dyn std::fmt::Display| format!("cannot draw \"{}\": {e}", c.title);
        let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(c.title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| err(&e))?;
        let x_fmt = |v: &f64| {
            let x = if c.x_log { 10f64.powf(*v) } else { *v };
            short(x)
        };
        chart
            .configure_mesh()
            .x_desc(c.x_label)
            .y_desc(c.y_label)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|v| short(*v))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (s, p)) in series.iter().zip(&pts).enumerate() {
            let color = Palette99::pick(i).to_rgba();
            // Markers first, where there are few points (a single bucket or flow is visible).
            if p.len() <= MAX_MARKED {
                chart
                    .draw_series(p.iter().map(|&xy| Circle::new(xy, 3, color.filled())))
                    .map_err(|e| err(&e))?;
            }
            let drawn = chart
                .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))
                .map_err(|e| err(&e))?;
            if i < MAX_LEGEND {
                drawn
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            }
        }
        if series.iter().take(MAX_LEGEND).any(|s| !s.name.is_empty()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .border_style(BLACK)
                .background_style(WHITE.mix(0.85))
                .draw()
                .map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
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
        };
        let s = [Series {
            name: "a".into(),
            points: vec![(1.0, 0.1), (10.0, 0.5), (100.0, 1.0), (-1.0, 0.3)],
        }];
        let svg = line_chart(&c, &s).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("x (us)") && svg.contains("<text"));
        assert_eq!(line_chart(&c, &s).unwrap(), svg, "deterministic");
        assert_eq!(short(12_500.0), "12.5k");
        assert_eq!(short(0.25), "0.250");
    }
}
