//! The hotspot map (`hotspot_map.svg`): the topology drawn by levels (endpoints at the
//! bottom, then the devices inside servers, then the switches tier by tier), each link
//! coloured by its utilisation over the active interval (green 0 % to red 100 %), drawn thick
//! where it dropped packets, and the pause tree or congestion tree as blue arrows from the
//! congested port's node to the node it holds back. A level with more than [`MAX_BOXES`]
//! nodes is aggregated into that many boxes of consecutive nodes (servers and pods stay
//! together, as builders number them so), and the links between two boxes count as one,
//! with the largest utilisation and the summed drops: readable at thousands of nodes.

use plotters::prelude::*;
use std::collections::BTreeMap;

/// Boxes per level at most.
pub const MAX_BOXES: usize = 32;

/// One directed port of `ports.csv`.
pub struct Link {
    pub node: String,
    pub peer: String,
    pub node_level: u8,
    pub peer_level: u8,
    pub utilisation_active: f64,
    pub drops: u64,
}

/// A tree edge: the node whose port was held back, and the node that held it.
pub struct Arrow {
    pub held: String,
    pub by: String,
}

/// A drawn box: its level, index in the level, and label.
struct Boxed {
    level: u8,
    index: usize,
    label: String,
}

fn level_name(level: u8) -> String {
    match level {
        0 => "endpoints".into(),
        1 => "inside servers".into(),
        l => format!("switches, tier {}", l - 2),
    }
}

/// Colour of a utilisation 0..1: green, yellow, red.
fn heat(u: f64) -> RGBColor {
    let u = u.clamp(0.0, 1.0);
    let (r, g) = if u < 0.5 {
        (u * 2.0, 1.0)
    } else {
        (1.0, (1.0 - u) * 2.0)
    };
    RGBColor((r * 220.0) as u8, (g * 180.0) as u8, 40)
}

/// Draws the map as an SVG of 1200 x 800.
pub fn hotspot_map(links: &[Link], arrows: &[Arrow], title: &str) -> Result<String, String> {
    // Nodes per level in node order (`ports.csv` lists ports node by node; a node seen only
    // as a peer comes after).
    let mut levels: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    let mut seen: BTreeMap<&str, ()> = BTreeMap::new();
    let owners = links.iter().map(|l| (&l.node, l.node_level));
    let peers = links.iter().map(|l| (&l.peer, l.peer_level));
    for (n, lv) in owners.chain(peers) {
        if seen.insert(n.as_str(), ()).is_none() {
            levels.entry(lv).or_default().push(n.clone());
        }
    }
    // Node -> box; boxes per level.
    let mut box_of: BTreeMap<&str, usize> = BTreeMap::new();
    let mut boxes: Vec<Boxed> = Vec::new();
    for (&lv, nodes) in &levels {
        let per = nodes.len().div_ceil(MAX_BOXES).max(1);
        for (k, chunk) in nodes.chunks(per).enumerate() {
            let label = if chunk.len() == 1 {
                chunk[0].clone()
            } else {
                format!("{}..{} ({})", chunk[0], chunk[chunk.len() - 1], chunk.len())
            };
            for n in chunk {
                box_of.insert(n.as_str(), boxes.len());
            }
            boxes.push(Boxed {
                level: lv,
                index: k,
                label,
            });
        }
    }
    let n_in_level = |lv: u8| boxes.iter().filter(|b| b.level == lv).count();
    let level_rows: Vec<u8> = levels.keys().copied().collect();
    let (w, h) = (1200i32, 800i32);
    let pos = |b: &Boxed| {
        let row = level_rows.iter().position(|&l| l == b.level).unwrap_or(0) as i32;
        let rows = level_rows.len().max(1) as i32;
        let y = h - 80 - row * (h - 200) / (rows - 1).max(1);
        let n = n_in_level(b.level) as i32;
        let x = 160 + (b.index as i32 * 2 + 1) * (w - 200) / (2 * n.max(1));
        (x, y)
    };
    // Links between boxes: the largest utilisation and the summed drops.
    let mut agg: BTreeMap<(usize, usize), (f64, u64)> = BTreeMap::new();
    for l in links {
        let (a, b) = (box_of[l.node.as_str()], box_of[l.peer.as_str()]);
        if a == b {
            continue;
        }
        let e = agg.entry((a.min(b), a.max(b))).or_insert((0.0, 0));
        e.0 = e.0.max(l.utilisation_active);
        e.1 += l.drops;
    }
    let mut svg = String::new();
    {
        let err = |e: &dyn std::fmt::Display| format!("cannot draw the hotspot map: {e}");
        let root = SVGBackend::with_string(&mut svg, (w as u32, h as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let text =
            |s: &str, size: i32, (x, y): (i32, i32)| Text::new(s.to_owned(), (x, y), ("sans-serif", size).into_font());
        root.draw(&text(title, 20, (20, 15))).map_err(|e| err(&e))?;
        root.draw(&text(
            "links: utilisation over the active interval, green 0% .. red 100%; thick: drops; blue arrows: pause / congestion tree (congested node -> node it holds back)",
            12,
            (20, 42),
        ))
        .map_err(|e| err(&e))?;
        for &lv in &level_rows {
            let y = boxes.iter().find(|b| b.level == lv).map_or(0, |b| pos(b).1);
            root.draw(&text(&level_name(lv), 13, (10, y - 6)))
                .map_err(|e| err(&e))?;
        }
        for (&(a, b), &(u, drops)) in &agg {
            let style = heat(u).stroke_width(if drops > 0 { 5 } else { 2 });
            root.draw(&PathElement::new(vec![pos(&boxes[a]), pos(&boxes[b])], style))
                .map_err(|e| err(&e))?;
        }
        let blue = RGBColor(30, 80, 220);
        for ar in arrows {
            let (Some(&a), Some(&b)) = (box_of.get(ar.by.as_str()), box_of.get(ar.held.as_str())) else {
                continue;
            };
            if a == b {
                continue;
            }
            let ((x0, y0), (x1, y1)) = (pos(&boxes[a]), pos(&boxes[b]));
            // Offset so that the arrow sits beside the link; head 80% of the way.
            let (hx, hy) = (x0 + (x1 - x0) * 4 / 5 + 6, y0 + (y1 - y0) * 4 / 5);
            root.draw(&PathElement::new(vec![(x0 + 6, y0), (hx, hy)], blue.stroke_width(2)))
                .map_err(|e| err(&e))?;
            root.draw(&Circle::new((hx, hy), 5, blue.filled()))
                .map_err(|e| err(&e))?;
        }
        for b in &boxes {
            let (x, y) = pos(b);
            root.draw(&Rectangle::new([(x - 9, y - 9), (x + 9, y + 9)], BLACK.filled()))
                .map_err(|e| err(&e))?;
            if n_in_level(b.level) <= 16 {
                root.draw(&text(&b.label, 10, (x - 20, y + 12))).map_err(|e| err(&e))?;
            }
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(a: &str, b: &str, la: u8, lb: u8, u: f64) -> Link {
        Link {
            node: a.into(),
            peer: b.into(),
            node_level: la,
            peer_level: lb,
            utilisation_active: u,
            drops: 0,
        }
    }

    #[test]
    fn large_levels_are_aggregated_into_boxes() {
        let mut links = Vec::new();
        for h in 0..1000 {
            links.push(link(&format!("h{h}"), &format!("s{}", h / 10), 0, 2, 0.5));
        }
        let svg = hotspot_map(&links, &[], "t").unwrap();
        let rects = svg.matches("<rect").count();
        // 1 background + at most 32 boxes per level (1000 hosts, 100 switches).
        assert!(rects <= 1 + 2 * MAX_BOXES, "{rects}");
        assert!(rects > 2 * 10);
        assert!(svg.contains("endpoints") && svg.contains("switches, tier 0"));
    }

    #[test]
    fn heat_runs_green_to_red() {
        assert_eq!(heat(0.0), RGBColor(0, 180, 40));
        assert_eq!(heat(1.0), RGBColor(220, 0, 40));
    }
}
