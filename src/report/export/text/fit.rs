//! Fitting a table to a width: secondary columns are left out, lowest rank first, until
//! every row stays on one line within the width; what can never be left out folds instead.

use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::width::display_width;

/// Column separators and a rule under the header, no outer border: the most table per
/// column of terminal.
const PLAIN: &str = "     -+ |          ";
const PLAIN_UTF8: &str = "     ─┼ │          ";

/// One column of a table to fit.
pub struct Col {
    pub header: String,
    pub cells: Vec<Cell>,
    /// Left out when the table does not fit, lowest first; `None`: never left out.
    pub drop_rank: Option<usize>,
    /// Right-aligned.
    pub numeric: bool,
    /// Shorter forms of `cells`, each shorter than the one before, for a protected column
    /// that would otherwise fold: the decision sheds "~N more" before its range is cut.
    pub shorter: Vec<Vec<Cell>>,
}

impl Col {
    pub fn new(header: impl Into<String>, cells: Vec<String>) -> Col {
        Col {
            header: header.into(),
            cells: cells.into_iter().map(Cell::new).collect(),
            drop_rank: None,
            numeric: false,
            shorter: Vec::new(),
        }
    }
    pub fn numeric(mut self) -> Col {
        self.numeric = true;
        self
    }
    pub fn drop_rank(mut self, rank: Option<usize>) -> Col {
        self.drop_rank = rank;
        self
    }
    /// Adds a shorter form of every cell, tried after the longer ones.
    pub fn or_shorter(mut self, cells: Vec<String>) -> Col {
        self.shorter
            .push(cells.into_iter().map(Cell::new).collect());
        self
    }
    /// The cells at `level` of shortening: 0 the full form, then each shorter one; a
    /// column with fewer forms keeps its shortest.
    fn cells_at(&self, level: usize) -> &[Cell] {
        match level.checked_sub(1) {
            None => &self.cells,
            Some(_) if self.shorter.is_empty() => &self.cells,
            Some(i) => &self.shorter[i.min(self.shorter.len() - 1)],
        }
    }
}

fn build(cols: &[&Col], level: usize, color: bool, width: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(if color { PLAIN_UTF8 } else { PLAIN });
    if color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(u16::try_from(width).unwrap_or(u16::MAX));
    t.set_header(cols.iter().map(|c| Cell::new(&c.header)));
    let rows = cols.first().map_or(0, |c| c.cells.len());
    for ri in 0..rows {
        t.add_row(cols.iter().map(|c| c.cells_at(level)[ri].clone()));
    }
    let last = cols.len().saturating_sub(1);
    for (i, column) in t.column_iter_mut().enumerate() {
        column.set_padding((u16::from(i > 0), u16::from(i < last)));
        if cols[i].numeric {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// Lines of the table, trailing spaces removed.
fn lines(t: &Table) -> Vec<String> {
    t.lines().map(|l| l.trim_end().to_string()).collect()
}

/// Whether the table of `shown`, its cells at `level` of shortening, fits `width`, and its
/// lines (coloured if asked).
fn attempt(
    shown: &[&Col],
    level: usize,
    rows: usize,
    color: bool,
    width: usize,
) -> (bool, Vec<String>) {
    let out = lines(&build(shown, level, color, width));
    // Colour codes take no columns: measure the plain rendering.
    let plain = if color {
        lines(&build(shown, level, false, width))
    } else {
        out.clone()
    };
    // Rows below the rule under the header: one line each, or some row was folded.
    let rule = plain
        .iter()
        .position(|l| !l.is_empty() && l.chars().all(|c| "-+─┼".contains(c)));
    let body = rule.map_or(plain.len(), |i| plain.len() - i - 1);
    let fits = plain.iter().all(|l| display_width(l) <= width)
        && body == rows
        && rule.is_some_and(|i| i <= 2);
    (fits, out)
}

/// The table fitted to `width`: its lines and the headers of the columns left out.
/// Columns are left out in rank order until the table fits; when it still does not, the
/// protected columns take their shorter forms, one step at a time, before anything folds
/// (a folded decision cell once hid the upper end of "undecided: within -25 to +7.9 %" on
/// a second line). Then the most important of the columns left out are taken back where
/// they still fit (a narrow one may, after a wide one had to go).
pub fn fit(cols: &[Col], color: bool, width: usize) -> (Vec<String>, Vec<String>) {
    let rows = cols.first().map_or(0, |c| c.cells.len());
    let mut order: Vec<usize> = (0..cols.len())
        .filter(|&i| cols[i].drop_rank.is_some())
        .collect();
    order.sort_by_key(|&i| cols[i].drop_rank);
    let pick = |out: &[usize]| -> Vec<&Col> {
        (0..cols.len())
            .filter(|i| !out.contains(i))
            .map(|i| &cols[i])
            .collect()
    };
    let mut out: Vec<usize> = Vec::new();
    let mut level = 0;
    let (mut fits, mut text) = attempt(&pick(&out), level, rows, color, width);
    for &i in &order {
        if fits {
            break;
        }
        out.push(i);
        (fits, text) = attempt(&pick(&out), level, rows, color, width);
    }
    let levels = cols.iter().map(|c| c.shorter.len()).max().unwrap_or(0);
    while !fits && level < levels {
        level += 1;
        (fits, text) = attempt(&pick(&out), level, rows, color, width);
    }
    if fits {
        for i in out.clone().into_iter().rev() {
            let without: Vec<usize> = out.iter().copied().filter(|&j| j != i).collect();
            let (ok, t) = attempt(&pick(&without), level, rows, color, width);
            if ok {
                out = without;
                text = t;
            }
        }
    }
    order.retain(|i| out.contains(i));
    (
        text,
        order.iter().map(|&i| cols[i].header.clone()).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secondary_columns_go_first_and_protected_ones_fold() {
        let long = "x".repeat(30);
        let cols = vec![
            Col::new("target", vec!["ext4".into(), "btrfs".into()]),
            Col::new("key", vec![long.clone(), long.clone()]).numeric(),
            Col::new("side", vec![long.clone(), long.clone()]).drop_rank(Some(0)),
            Col::new("decision", vec![long.clone(), "worse".into()]),
        ];
        let (lines, left) = fit(&cols, false, 80);
        assert_eq!(left, vec!["side"]);
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:?}");
        assert_eq!(lines.len(), 4, "{lines:?}");
        let (narrow, _) = fit(&cols, false, 40);
        assert!(narrow.iter().all(|l| l.chars().count() <= 40), "{narrow:?}");
        assert!(narrow.iter().any(|l| l.contains("decision")));
    }
}
