() => {
  // The page's script (ui/app.py page_js passes it to Gradio's launch with assets/keys.js, the keys and the step
  // buttons' spoken names the HTML export shares, and assets/fit_labels.js, which fits the tree figures' labels
  // to the width each is drawn at).
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
  nameCharts();
}
