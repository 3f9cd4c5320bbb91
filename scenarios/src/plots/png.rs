//! PNG figures (`--plot-format png` or `both`): each SVG figure rasterized by `resvg` at
//! [`SCALE`] times its size, so the PNG is the SVG's picture pixel for pixel. Text is set in
//! DejaVu Sans, embedded from `scenarios/assets/fonts/` (its license beside it): no system font
//! is looked up, so a bare machine draws the same pixels, and the same SVG gives the same bytes.

use resvg::tiny_skia::{Pixmap, Transform};
use resvg::usvg::{Options, Tree, fontdb};
use std::sync::{Arc, OnceLock};

/// Pixels per SVG pixel: an 800 x 480 chart is a 1600 x 960 PNG.
pub const SCALE: u32 = 2;

/// DejaVu Sans 2.37 (Bitstream Vera license, `scenarios/assets/fonts/LICENSE`).
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "DejaVu Sans";

/// The one font database: the embedded font, which every generic family (the figures ask for
/// `sans-serif`) and unknown family falls back to.
fn fonts() -> Arc<fontdb::Database> {
    static DB: OnceLock<Arc<fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family(FAMILY);
        db.set_serif_family(FAMILY);
        db.set_monospace_family(FAMILY);
        Arc::new(db)
    })
    .clone()
}

/// The PNG of `svg`. `Err` when the SVG does not parse or is too large to rasterize.
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let opt = Options {
        font_family: FAMILY.to_owned(),
        fontdb: fonts(),
        ..Options::default()
    };
    let tree = Tree::from_str(svg, &opt).map_err(|e| format!("cannot read the SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let (w, h) = (size.width() * SCALE, size.height() * SCALE);
    let mut pixmap = Pixmap::new(w, h).ok_or_else(|| format!("cannot rasterize {w} x {h} pixels"))?;
    let s = SCALE as f32;
    resvg::render(&tree, Transform::from_scale(s, s), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("cannot encode the PNG: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_drawn_with_the_embedded_font() {
        let blank = r#"<svg xmlns="http://www.w3.org/2000/svg" width="60" height="20"><rect width="60" height="20" fill="white"/></svg>"#;
        let text = blank.replace(
            "</svg>",
            r#"<text x="2" y="15" font-family="sans-serif" font-size="14">Gb/s</text></svg>"#,
        );
        let (a, b) = (png(blank).unwrap(), png(&text).unwrap());
        let dark = |p: &[u8]| {
            let px = Pixmap::decode_png(p).unwrap();
            assert_eq!((px.width(), px.height()), (120, 40));
            px.pixels().iter().filter(|c| c.red() < 128).count()
        };
        assert_eq!(dark(&a), 0);
        assert!(dark(&b) > 50, "the text's glyphs are drawn");
        assert_eq!(png(&text).unwrap(), b, "deterministic");
    }
}
