() => {
  // The tree figures (viz/tree_figure.py) on a page, fitted to the width the browser draws each at, which the server
  // does not know. A page calls this once: the app's page (ui/app.py page_js, beside assets/app.js) and the
  // standalone HTML export (viz/html_export.py embeds it). On a figure NARROW px wide or less (a phone, Compare's
  // side-by-side panels) the colour bar lies across the figure under the legend (fitColourBar), which leaves the tree
  // the figure's width; a wider figure keeps it at the plot's right, as the server drew it. After each draw, a bonus
  // token's label that runs past the plot's right edge moves left inside it (and up, clear of the accepted path's
  // labels, and on a narrow figure of the markers it would lie on), and on a narrow figure or one whose bonus label
  // moved, a label is hidden where it would touch another (GAP px or closer), the accepted path's kept first, then
  // the bonus token's, the root's and the likeliest nodes'; a draft node's label is hidden too where it would cover
  // another node's marker (its centre), as a label wider than the columns' spacing does when the next column has a
  // node on its row. An accepted token's label sits above its diamond or below it: on a phone the path's columns are
  // 16-25 px apart, so neighbours alternate above and below the path, and where a path 15 or more deep leaves too
  // little room for that a label moves out a line or two further (still centred on its column, inside the plot area).
  // The path's labels are placed together (placePath): none touches another, and the fewest the search finds lie on
  // another node's marker (over GAP px of its box each way, as a sibling's dot one row up or down) or move out a line.
  // A label lies on a draft node's dot (which keeps its hover) before it moves out a line, before it covers the bonus
  // token's label, before it lies on an accepted diamond or the bonus token's star, and on any of them before it is
  // hidden, since an accepted token matters more than any marker: it is hidden only as a last resort, where no
  // arrangement the search weighs keeps it clear of the other accepted labels.
  // Each node's hover keeps its text. A wider figure whose labels fit is left as the server drew it.
  const NARROW = 640;
  const GAP = 2;
  const RANKS = ['accepted path', 'bonus token', 'root', 'draft nodes'];
  const rankOf = (name) => RANKS.findIndex((r) => (name || '').startsWith(r));
  // Boxes closer than `gap` px.
  const meets = (a, b, gap) => a.left < b.right + gap && b.left < a.right + gap && a.top < b.bottom + gap
    && b.top < a.bottom + gap;
  const centre = (r) => ({x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2});
  const covers = (r, c) => r.left < c.x && c.x < r.right && r.top < c.y && c.y < r.bottom;
  // Every point's marker, measured once: its datum (which its label shares), its box, and whether it is the accepted
  // path's or the bonus token's (a diamond, the root's square, the star): a label keeps off those as off a diamond.
  const markersOf = (gd) => [...gd.querySelectorAll('.scatterlayer .trace')].flatMap((g) => {
    const accepted = rankOf(g.__data__?.[0]?.trace?.name) <= 1;
    return [...g.querySelectorAll('.points path.point')].map((m) => {
      const r = m.getBoundingClientRect();
      return {d: m.__data__, r, c: centre(r), accepted};
    });
  });
  const treeLabels = (gd, markers) => {
    const marks = new Map(markers.map((m) => [m.d, m]));     // a point's marker and its label share Plotly's datum
    const labels = [];
    for (const g of gd.querySelectorAll('.scatterlayer .trace')) {
      const rank = rankOf(g.__data__?.[0]?.trace?.name);
      if (rank < 0) continue;
      for (const tp of g.querySelectorAll('.textpoint')) {
        const t = tp.querySelector('text');
        if (!t) continue;
        t.removeAttribute('transform');          // what an earlier pass did (Plotly reuses the elements)
        t.style.visibility = '';
        if (t.textContent) {
          labels.push({t, rank, p: Number(tp.__data__?.mc) || 0, at: labels.length, mark: marks.get(tp.__data__)});
        }
      }
    }
    // The accepted path's labels in the path's order (so they alternate), the others likeliest first.
    return labels.sort((a, b) => a.rank - b.rank || (a.rank === 0 ? a.at - b.at : b.p - a.p));
  };
  // Label box `r`, above its marker `m`, mirrored to the same distance below it.
  const below = (r, m) => {
    const dy = m.bottom + (m.top - r.bottom) - r.top;
    return {left: r.left, right: r.right, top: r.top + dy, bottom: r.bottom + dy, dy};
  };
  // A bonus token's label that runs past the plot's right edge moves left inside it; then it moves up above each
  // accepted label it would print on and, on a figure NARROW px wide or less, above each marker it would lie on
  // other than its star (there the next column's nodes are close enough to reach). Returns whether it moved.
  const placeBonus = (gd, labels, markers) => {
    const bonus = labels.find((l) => l.rank === 1);
    const size = gd._fullLayout._size, box = gd.getBoundingClientRect();
    if (!bonus) return false;
    const r = bonus.t.getBoundingClientRect(), own = bonus.mark?.c;
    const right = box.left + size.l + size.w - 2;
    const narrow = gd._fullLayout.width <= NARROW;
    if (r.right <= right && !narrow) return false;
    const dx = r.right > right ? Math.max(right - r.right, box.left + size.l - r.left) : 0;
    const marks = narrow ? markers.filter((m) => own && Math.abs(m.c.x - own.x) + Math.abs(m.c.y - own.y) > 1) : [];
    let dy = 0;
    for (let tries = 0; tries < 4; tries++) {    // above each accepted label or marker it would print on
      const at = {left: r.left + dx, right: r.right + dx, top: r.top + dy, bottom: r.bottom + dy};
      const hit = labels.filter((l) => l.rank === 0).map((l) => l.t.getBoundingClientRect())
        .find((k) => meets(at, k, GAP)) || marks.map((m) => m.r).find((k) => meets(at, k, -GAP));
      if (!hit) break;
      dy = hit.top - r.bottom - GAP - 1;
    }
    if (!dx && !dy) return false;
    bonus.t.setAttribute('transform', `translate(${dx},${dy})`);
    return true;
  };
  // What an accepted label at box `r` costs for what it lies on: nothing where it is free, ON.dot where it lies on a
  // draft node's marker, ON.diamond on an accepted one or the bonus token's star (its node's own markers, those
  // sharing the centre of `own`, do not count), and ON.bonus more where it touches the bonus token's label `bonus`
  // (which is hidden then).
  const ON = {dot: 1, line: 10, bonus: 50, diamond: 100, hidden: 10000};
  const spotCost = (r, own, markers, bonus) => {
    const on = markers.filter((m) => Math.abs(m.c.x - own.c.x) + Math.abs(m.c.y - own.c.y) > 1
      && meets(r, m.r, -GAP));
    return (on.some((m) => m.accepted) ? ON.diamond : on.length ? ON.dot : 0)
      + (bonus && meets(r, bonus, GAP) ? ON.bonus : 0);
  };
  // Where an accepted label may go: above its diamond and below it and, with `lines` over 1 (a narrow figure), each
  // further line out on either side (one label's height and GAP + 1 px apart) that stays inside the plot area `plot`.
  // Each spot is a box with `dy`, how far it moves the label, and `line`, 0 next to the diamond.
  const spotsOf = (l, lines, plot) => {
    const r = l.t.getBoundingClientRect(), under = below(r, l.mark.r), step = r.bottom - r.top + GAP + 1;
    const spots = [];
    for (let k = 0; k < lines; k++) {
      for (const [b, dy] of [[r, -k * step], [under, k * step]]) {
        const s = {left: b.left, right: b.right, top: b.top + dy, bottom: b.bottom + dy, dy: (b.dy || 0) + dy, line: k};
        if (!k || (s.top >= plot.top && s.bottom <= plot.bottom)) spots.push(s);
      }
    }
    return spots;
  };
  // The accepted path's labels, placed together along the path: each label's spots (spotsOf) or hidden, none touching
  // another. A spot costs what it lies on (spotCost) and ON.line for each line it lies out from its diamond, so a
  // label moves out a line only where a closer spot would touch another label or lie on a diamond or the star. The
  // cheapest arrangement ending in each choice of the last MEMORY labels is kept (every label before them still
  // counts: no spot may touch one); the cheapest at the path's end wins, the one found first where it ties (above
  // before below, nearer lines first). Returns each label's box, or null where it is hidden.
  const MEMORY = 3, LINES = 3;
  const placePath = (path, markers, lines, plot, bonus) => {
    let ends = new Map([['', {cost: 0, boxes: [], picks: [], keys: []}]]);
    for (const l of path) {
      const spots = spotsOf(l, lines, plot).map((r) => ({r, cost: spotCost(r, l.mark, markers, bonus)
        + ON.line * r.line}));
      spots.push({r: null, cost: ON.hidden});
      const next = new Map();
      for (const e of ends.values()) {
        spots.forEach(({r, cost}, j) => {
          if (r && e.boxes.some((k) => meets(r, k, GAP))) return;
          const keys = [...e.keys, j].slice(-MEMORY), key = keys.join(' ');
          if (e.cost + cost < (next.get(key)?.cost ?? Infinity)) {
            next.set(key, {cost: e.cost + cost, boxes: r ? [...e.boxes, r] : e.boxes, picks: [...e.picks, r], keys});
          }
        });
      }
      ends = next;
    }
    return [...ends.values()].reduce((a, b) => (b.cost < a.cost ? b : a)).picks;
  };
  // The colour bar of a figure NARROW px wide or less: the server draws it at the plot's right, where on a phone it
  // takes a quarter of the width and squeezes the tree's columns to ~18 px apart; there it lies across the figure
  // instead, at its foot under the legend, with the same scale, ticks and title (on one line, under the ticks), and
  // the figure grows by BAR_PX, the band it takes (strip, ticks, title and pads), so the tree keeps its height.
  // Plotly places a bar given in the figure's own coordinates (yref 'container') in a margin band of its own under
  // the legend; a title above the strip is drawn on the strip when the bar is redrawn, so the title goes under the
  // ticks. The traces coloured on the server's colour axis move to a copy of it, NARROW_AXIS, drawn that way (a
  // colour bar redrawn in place in another orientation keeps parts of the old one); a wider figure moves them back.
  // autosize is set, so Plotly still follows the window's width once the height is set. Returns whether the figure
  // is redrawn, which fits its labels again.
  const BAR_PX = 88, NARROW_AXIS = 'coloraxis2';
  const fitColourBar = (gd) => {
    const layout = gd.layout, axis = layout.coloraxis;
    const traces = (gd.data || []).map((t, i) => [t.marker?.coloraxis, i])
      .filter(([c]) => c === 'coloraxis' || c === NARROW_AXIS);
    const narrow = gd._fullLayout.width <= NARROW, across = traces.some(([c]) => c === NARROW_AXIS);
    if (!window.Plotly || !axis?.colorbar || !traces.length || narrow === across) return false;
    // (a resize leaves the height to Plotly: layout.height is unset then)
    const height = (layout.height || gd._fullLayout.height) + (narrow ? BAR_PX : -BAR_PX);
    const bar = axis.colorbar, title = bar.title || {};
    const flat = {...axis, colorbar: {...bar, orientation: 'h', x: 0, xanchor: 'left', lenmode: 'fraction', len: 1,
      yref: 'container', y: 0, yanchor: 'bottom', title: {...title, side: 'bottom',
        text: String(title.text || '').replace(/<br>/g, ' ')}}};
    window.Plotly.update(gd, {'marker.coloraxis': narrow ? NARROW_AXIS : 'coloraxis'},
      {[NARROW_AXIS]: narrow ? flat : null, height, autosize: true}, traces.map(([, i]) => i));
    return true;
  };
  const fitLabels = (gd) => {
    if (!gd._fullLayout || !(gd.data || []).some((t) => t.name === 'draft nodes') || fitColourBar(gd)) return;
    const markers = markersOf(gd);
    const labels = treeLabels(gd, markers);
    const moved = placeBonus(gd, labels, markers);
    if (!moved && gd._fullLayout.width > NARROW) return;
    const path = labels.filter((l) => l.rank === 0 && l.mark), kept = [];
    const size = gd._fullLayout._size, box = gd.getBoundingClientRect();
    const plot = {top: box.top + size.t, bottom: box.top + size.t + size.h};
    const lines = gd._fullLayout.width <= NARROW ? LINES : 1;
    const bonus = labels.find((l) => l.rank === 1)?.t.getBoundingClientRect();
    placePath(path, markers, lines, plot, bonus).forEach((r, i) => {
      if (!r) path[i].t.style.visibility = 'hidden';
      else {
        if (r.dy) path[i].t.setAttribute('transform', `translate(0,${r.dy})`);
        kept.push(r);
      }
    });
    for (const l of labels.filter((x) => !path.includes(x))) {
      const r = l.t.getBoundingClientRect();
      if (kept.some((k) => meets(r, k, GAP)) || (l.rank === 3 && markers.some((m) => covers(r, m.c)))) {
        l.t.style.visibility = 'hidden';
      } else kept.push(r);
    }
  };
  // Each plot is fitted in the frame after each draw (a new step, a resize, a zoom): after Plotly's events,
  // listened to again whenever Plotly gives the plot a new event hub. A react that moves the margins places
  // the labels again after its afterplot event, so its own event refits too.
  const hubs = new WeakMap();
  const DRAWN = ['plotly_afterplot', 'plotly_react', 'plotly_relayout', 'plotly_restyle', 'plotly_update'];
  const refit = (gd) => {
    if (gd.ottQueued) return;
    gd.ottQueued = true;
    requestAnimationFrame(() => { gd.ottQueued = false; fitLabels(gd); });
  };
  let queued = false;
  const watchPlots = () => {
    queued = false;
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      if (!gd.on || hubs.get(gd) === gd._ev) continue;
      hubs.set(gd, gd._ev);
      for (const e of DRAWN) gd.on(e, () => refit(gd));
      refit(gd);
    }
  };
  new MutationObserver(() => {
    if (!queued) { queued = true; requestAnimationFrame(watchPlots); }
  }).observe(document.body, {childList: true, subtree: true});
}
