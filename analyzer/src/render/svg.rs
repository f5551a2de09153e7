//! SVG output through plotters' SVG backend: text stays text, so the viewer's font draws it.

use plotters::prelude::*;

use super::figure::{draw, Figure};
use super::RenderError;

/// The figure as an SVG document.
pub fn to_svg(fig: &Figure) -> Result<String, RenderError> {
    super::font::register()?;
    let mut out = String::new();
    {
        let size = (fig.width.max(1) as u32, fig.height.max(1) as u32);
        let area = SVGBackend::with_string(&mut out, size).into_drawing_area();
        draw(&area, fig).map_err(|e| RenderError::Draw(e.to_string()))?;
        area.present()
            .map_err(|e| RenderError::Draw(e.to_string()))?;
    }
    Ok(out)
}
