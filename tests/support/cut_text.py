"""Text a person cannot read whole, found in the browser (issue 30: "nothing cut at 1440×900"):
in a data grid (`st.dataframe` paints on a canvas), a cell or header wider than its column or a grid
wider than its box; in an HTML table, a cell whose text overflows it or a table wider than its box
or the window. A grid's column widths are read from its React props, its texts from the grid's
accessible table, and measured with the grid's own font on a canvas."""

from __future__ import annotations

CUT_TEXT_JS = """(root) => {
  const cut = [];
  const ctx = document.createElement('canvas').getContext('2d');
  const scope = root ? document.querySelector(root) : document;
  if (!scope) return cut;
  const where = el => {
    const keyed = el.closest('[class*="st-key-"]');
    return keyed ? [...keyed.classList].find(c => c.startsWith('st-key-')) : '?';
  };
  const say = (el, what) => cut.push({where: where(el), what});
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const gridColumns = scroller => {
    const fiberKey = Object.keys(scroller).find(k => k.startsWith('__reactFiber'));
    let fiber = scroller[fiberKey];
    for (let i = 0; fiber && i < 80; i++, fiber = fiber.return) {
      const cols = fiber.memoizedProps && fiber.memoizedProps.columns;
      if (Array.isArray(cols) && cols.length && cols[0].width !== undefined)
        return cols.map(c => ({title: String(c.title), width: c.width}));
    }
    return null;
  };
  for (const grid of scope.querySelectorAll('[data-testid="stDataFrame"]')) {
    const scroller = grid.querySelector('.dvn-scroller');
    if (!shown(grid) || !scroller) continue;
    const columns = gridColumns(scroller);
    if (!columns) { say(grid, 'the grid columns are unreadable'); continue; }
    const style = getComputedStyle(grid.querySelector('[style*="--gdg-font-family"]') || grid);
    const family = style.getPropertyValue('--gdg-font-family') || 'sans-serif';
    const body = style.getPropertyValue('--gdg-base-font-style') || '400 14px';
    const head = style.getPropertyValue('--gdg-header-font-style') || body;
    const pad = 8 * 2;  // the grid's cell padding, either side
    const box = scroller.getBoundingClientRect();
    const total = columns.reduce((s, c) => s + c.width, 0);
    if (total > box.width + 1) say(grid, `grid ${total}px wide in a ${Math.round(box.width)}px box`);
    if (box.right > window.innerWidth + 1) say(grid, `grid ends at ${Math.round(box.right)}px`);
    const needs = (text, font) => {
      ctx.font = `${font} ${family}`;
      return pad + Math.max(...text.split('\\n').map(line => ctx.measureText(line).width));
    };
    const cells = [...grid.querySelectorAll('th[role="columnheader"], td[role="gridcell"]')];
    for (const cell of cells) {
      const col = columns[Number(cell.getAttribute('aria-colindex')) - 1];
      const need = needs(cell.textContent, cell.tagName === 'TH' ? head : body);
      if (col && need > col.width + 1)
        say(grid, `${col.title}: "${cell.textContent.slice(0, 60)}" needs ${Math.round(need)}px of ` +
                  `${col.width}`);
    }
  }
  for (const table of scope.querySelectorAll('table')) {
    if (table.closest('[data-testid="stDataFrame"]') || !shown(table)) continue;
    const box = table.parentElement;
    if (table.scrollWidth > box.clientWidth + 1)
      say(table, `table ${table.scrollWidth}px wide in a ${box.clientWidth}px box`);
    if (table.getBoundingClientRect().right > window.innerWidth + 1)
      say(table, `table ends at ${Math.round(table.getBoundingClientRect().right)}px`);
    for (const cell of table.querySelectorAll('td, th')) {
      if (cell.scrollWidth > cell.clientWidth + 1)
        say(table, `"${cell.textContent.slice(0, 60)}" needs ${cell.scrollWidth}px of ${cell.clientWidth}`);
    }
  }
  return cut;
}"""


def cut_text(page, root: str | None = None) -> list[dict[str, str]]:
    """What is cut on the page (under the CSS selector `root`), each as `where` (the nearest keyed
    element) and `what`."""
    return page.evaluate(CUT_TEXT_JS, root)
