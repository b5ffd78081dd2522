() => {
  // The page's script (ui/app.py passes this to Gradio's launch).
  // Keys: ← / → step and Space play / pause in Explore, unless a field (text, slider, menu) or a button
  // other than the page's own step, run and lesson buttons has the focus (a click on one leaves it there).
  // Space presses whichever of Play / Pause shows: the page shows Pause only while steps play.
  const OURS = /^(prev|next|play|pause|run|preset-\d+|learn-preset-\d+)$/;
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (t && t.tagName === 'BUTTON' && !OURS.test(t.id)) return;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
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
  const find = new MutationObserver(() => {
    const host = document.getElementById('gen-text');
    if (!host) return;
    find.disconnect();
    new MutationObserver(keepCurrent).observe(host, {childList: true, subtree: true});
  });
  find.observe(document.body, {childList: true, subtree: true});
}
