() => {
  // The page's script (ui/app.py passes this to Gradio's launch).
  // Keys: ← / → step and Space play / pause in Explore, unless a field (text, slider, menu), a link (the
  // footer's "Use via API", Plotly's logo: Space and the arrows follow or scroll there) or a button other
  // than the page's own step, run and lesson buttons has the focus (a click on one leaves it there).
  // Space presses whichever of Play / Pause shows: the page shows Pause only while steps play.
  // A button reached with the keyboard (Tab) keeps Space, the key that presses a focused button: only a
  // button a mouse or touch press focused (`pointed`) hands Space to Play / Pause.
  const OURS = /^(prev|next|play|pause|run|preset-\d+|learn-preset-\d+)$/;
  let pointed = null;
  document.addEventListener('pointerdown', (e) => { pointed = e.target.closest?.('button') || null; }, true);
  document.addEventListener('focusin', (e) => { if (e.target !== pointed) pointed = null; }, true);
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (t && t.tagName === 'BUTTON' && (!OURS.test(t.id) || (e.key === ' ' && t !== pointed))) return;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
    if (t && t.closest?.('a[href]')) return;
    const press = (id) => {
      const b = document.getElementById(id);
      if (!b || b.offsetParent === null) return false;   // only while Explore is the visible tab
      b.click();
      return true;
    };
    let done = false;
    if (e.key === 'ArrowLeft') done = press('prev');
    else if (e.key === 'ArrowRight') done = press('next');
    else if (e.key === ' ') done = press('pause') || press('play');
    if (done) e.preventDefault();
  });
  // Starting a run (Run, a lesson, a deep link's run) brings its tree into view: Explore's step view,
  // or the Learn tab's live tree for the Learn tab's lessons.
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('#run, [id^="preset-"], [id^="learn-preset-"]');
    if (!b) return;
    const where = b.id.startsWith('learn-') ? 'learn-plot' : 'step-view';
    setTimeout(() => document.getElementById(where)?.scrollIntoView({block: 'start', behavior: 'smooth'}), 50);
  }, true);
  // A text strip that scrolls (presenter mode) keeps the selected step's tokens in view; the observer
  // watches only the text strip, found once the page has drawn it.
  const keepCurrent = () => {
    const box = document.querySelector('#gen-text .gen-text');
    const cur = box && box.querySelector('.tok.current');
    if (!cur || box.scrollHeight <= box.clientHeight) return;
    const top = cur.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - 30) box.scrollTop = Math.max(0, top - 40);
  };
  // The strip's sentence on the selected step (viz/text_view.py step_summary) is drawn anew with each step,
  // which a screen reader does not announce: a polite live region that stays in the strip's block says each
  // new sentence, and the drawn copy is hidden from readers, so a reader browsing the page hears it once.
  const sayStep = (host) => {
    let live = host.querySelector(':scope > .step-said');
    if (!live) {
      live = Object.assign(document.createElement('div'), {className: 'sr-only step-said'});
      live.setAttribute('aria-live', 'polite');
      host.append(live);
    }
    const said = host.querySelector('p.sr-only');
    if (said && said.getAttribute('aria-hidden') !== 'true') said.setAttribute('aria-hidden', 'true');
    const text = said ? said.textContent : '';
    if (live.textContent !== text) live.textContent = text;
  };
  const find = new MutationObserver(() => {
    const host = document.getElementById('gen-text');
    if (!host) return;
    find.disconnect();
    sayStep(host);
    // Gradio patches the strip in place (the sentence's text, its attributes, the selected step's class), so
    // those changes count too.
    new MutationObserver(() => { keepCurrent(); sayStep(host); }).observe(host, {childList: true, subtree: true,
      characterData: true, attributes: true, attributeFilter: ['aria-hidden', 'class']});
  });
  find.observe(document.body, {childList: true, subtree: true});
  // Tree figures (viz/tree_figure.py) drawn at the width the browser gives them, which the server does not
  // know: after each draw, a bonus token's label that runs past the plot's right edge moves left inside it
  // (and up, clear of the accepted path's labels), and on a figure NARROW px wide or less (a phone, Compare's
  // side-by-side panels) or one whose bonus label moved, a label is hidden where it would touch another
  // (GAP px or closer), the accepted path's kept first, then the bonus token's, the root's and the likeliest
  // nodes'; a draft node's label is hidden too where it would cover another node's marker (its centre), as a
  // label wider than the columns' spacing does when the next column has a node on its row. An accepted
  // token's label that would touch an accepted label already kept (on a phone the path's columns are ~20 px
  // apart) moves from above its diamond to below it, so neighbours alternate above and below the path; it is
  // hidden only where both spots meet a kept label. Each node's hover keeps its text. A wider figure whose
  // labels fit is left as the server drew it.
  const NARROW = 640;
  const GAP = 2;
  const RANKS = ['accepted path', 'bonus token', 'root', 'draft nodes'];
  const rankOf = (name) => RANKS.findIndex((r) => (name || '').startsWith(r));
  // Boxes closer than `gap` px.
  const meets = (a, b, gap) => a.left < b.right + gap && b.left < a.right + gap && a.top < b.bottom + gap
    && b.top < a.bottom + gap;
  const covers = (r, c) => r.left < c.x && c.x < r.right && r.top < c.y && c.y < r.bottom;
  const markerCentres = (gd) => [...gd.querySelectorAll('.scatterlayer .trace .points path.point')].map((m) => {
    const r = m.getBoundingClientRect();
    return {x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2};
  });
  const treeLabels = (gd) => {
    const labels = [];
    for (const g of gd.querySelectorAll('.scatterlayer .trace')) {
      const rank = rankOf(g.__data__?.[0]?.trace?.name);
      if (rank < 0) continue;
      // A point's marker and its label share Plotly's datum.
      const marks = new Map([...g.querySelectorAll('.points path.point')].map((m) => [m.__data__, m]));
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
  const keepBonusInside = (gd, labels) => {
    const bonus = labels.find((l) => l.rank === 1);
    const size = gd._fullLayout._size, box = gd.getBoundingClientRect();
    if (!bonus) return false;
    const r = bonus.t.getBoundingClientRect();
    const right = box.left + size.l + size.w - 2;
    if (r.right <= right) return false;
    const dx = Math.max(right - r.right, box.left + size.l - r.left);
    let dy = 0;
    for (let tries = 0; tries < 4; tries++) {    // above each accepted label it would print on
      const at = {left: r.left + dx, right: r.right + dx, top: r.top + dy, bottom: r.bottom + dy};
      const hit = labels.find((l) => l.rank === 0 && meets(at, l.t.getBoundingClientRect(), GAP));
      if (!hit) break;
      dy = hit.t.getBoundingClientRect().top - r.bottom - GAP - 1;
    }
    bonus.t.setAttribute('transform', `translate(${dx},${dy})`);
    return true;
  };
  const fitLabels = (gd) => {
    if (!gd._fullLayout || !(gd.data || []).some((t) => t.name === 'draft nodes')) return;
    const labels = treeLabels(gd);
    const moved = keepBonusInside(gd, labels);
    if (!moved && gd._fullLayout.width > NARROW) return;
    const kept = [], centres = markerCentres(gd);
    const clash = (r) => kept.some((k) => meets(r, k, GAP));
    for (const l of labels) {
      let r = l.t.getBoundingClientRect();
      if (l.rank === 0 && l.mark && clash(r)) {
        const low = below(r, l.mark.getBoundingClientRect());
        if (!clash(low)) {
          l.t.setAttribute('transform', `translate(0,${low.dy})`);
          r = low;
        }
      }
      if (clash(r) || (l.rank === 3 && centres.some((c) => covers(r, c)))) l.t.style.visibility = 'hidden';
      else kept.push(r);
    }
  };
  // Each plot is fitted in the frame after each draw (a new step, a resize, a zoom): after Plotly's events,
  // listened to again whenever Plotly gives the plot a new event hub. A react that moves the margins places
  // the labels again after its afterplot event, so its own event refits too.
  const hubs = new WeakMap();
  const DRAWN = ['plotly_afterplot', 'plotly_react', 'plotly_relayout', 'plotly_restyle'];
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
  // Plotly's SVG has no name of its own: each chart is named, for screen readers, by its block's label
  // ("Draft tree of the selected step"). The text strip's live region says the selected step in words.
  const nameCharts = () => {
    for (const gd of document.querySelectorAll('.js-plotly-plot:not([aria-label])')) {
      const label = gd.closest('.block')?.querySelector('[data-testid="block-label"]')?.textContent.trim();
      if (!label) continue;
      gd.setAttribute('role', 'figure');
      gd.setAttribute('aria-label', label);
    }
  };
  new MutationObserver(nameCharts).observe(document.body, {childList: true, subtree: true});
}
