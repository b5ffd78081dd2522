() => {
  // The page's script (ui/app.py page_js passes it to Gradio's launch with assets/keys.js, the keys, the step
  // buttons' spoken names and the text strip's live region the HTML export shares, and assets/fit_labels.js,
  // which fits the tree figures' labels to the width each is drawn at).
  // Starting a run (Run, a lesson, a deep link's run) brings its tree into view: Explore's step view,
  // or the Learn tab's live tree for the Learn tab's lessons.
  document.addEventListener('click', (e) => {
    const b = e.target.closest && e.target.closest('#run, [id^="preset-"], [id^="learn-preset-"]');
    if (!b) return;
    const where = b.id.startsWith('learn-') ? 'learn-plot' : 'step-view';
    setTimeout(() => document.getElementById(where)?.scrollIntoView({block: 'start', behavior: 'smooth'}), 50);
  }, true);
  // Plotly's SVG has no name of its own: each chart is named, for screen readers, by its block's label
  // ("Draft tree of the selected step"; the HTML export names its chart in its own HTML). The text strip's live
  // region (assets/keys.js) says the selected step in words.
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
