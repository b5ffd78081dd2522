() => {
  // The keys and the spoken names of a page that shows a run's steps: the app's page (ui/app.py page_js, beside
  // assets/app.js) and the standalone HTML export (viz/html_export.py embeds it). A page calls this once; its step
  // buttons are #prev, #next, #play and #pause (Pause shows only while steps play), the app's run and lesson
  // buttons #run, #preset-N and #learn-preset-N, and its text strip viz/text_view.py's `.gen-text`, drawn inside
  // #gen-text (the app's gr.HTML block; the export's box around the text it draws anew with each step), where the
  // strip's live region says each new step (below).
  // Keys: ← / → step and Space play / pause, unless a field (text, slider, menu), a link (the app's footer's "Use
  // via API", Plotly's logo: Space and the arrows follow or scroll there), a button other than the page's own
  // step, run and lesson buttons (a click on one leaves the focus there) or a token of the text strip has the
  // focus (the strip's and the charts' toolbars' own keys: `GROUPS` below). Space presses whichever of Play /
  // Pause shows. A button reached with the keyboard (Tab) keeps Space, the key that presses a focused button:
  // only a button a mouse or touch press focused (`pointed`) hands Space to Play / Pause. A text token a press
  // focused hands its keys (← / →, Space) to the steps too: a teacher who clicks a token and then steps with
  // the arrows steps, where one who reached the strip with Tab moves among its tokens.
  const OURS = /^(prev|next|play|pause|run|preset-\d+|learn-preset-\d+)$/;
  let pointed = null;
  document.addEventListener('pointerdown', (e) => { pointed = e.target.closest?.('button, .tok') || null; }, true);
  document.addEventListener('focusin', (e) => { if (e.target !== pointed) pointed = null; }, true);
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.defaultPrevented) return;   // a group's own key (below)
    if (t && t.tagName === 'BUTTON' && (!OURS.test(t.id) || (e.key === ' ' && t !== pointed))) return;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
    if (t && t.closest?.('a[href]')) return;
    const press = (id) => {
      const b = document.getElementById(id);
      if (!b || b.offsetParent === null) return false;   // only a shown button (in the app, Explore's tab shown)
      b.click();
      return true;
    };
    let done = false;
    if (e.key === 'ArrowLeft') done = press('prev');
    else if (e.key === 'ArrowRight') done = press('next');
    else if (e.key === ' ') done = press('pause') || press('play');
    if (done) e.preventDefault();
  });
  // The step buttons' names for screen readers: the visible text's symbols (◀ ▶ ❚❚) read as their names
  // ("black left-pointing triangle"). Gradio's gr.Button takes no aria-label, and draws Pause anew each time it
  // shows, so the names are set here, on whichever buttons are on the page (the export's too, so the names have
  // one copy); each name holds the visible word, so a voice user's "click Prev" still finds its button.
  const NAMES = {prev: 'Previous step', next: 'Next step', play: 'Play steps', pause: 'Pause'};
  const nameButtons = () => {
    for (const [id, name] of Object.entries(NAMES)) {
      const b = document.getElementById(id);
      if (b && b.getAttribute('aria-label') !== name) b.setAttribute('aria-label', name);
    }
  };
  // Roving focus: a group of many buttons is one Tab stop. ← / → (Home / End) move among its buttons, and the
  // button focused last keeps the stop (in a group drawn anew, `start`'s or the first). Enter and Space press a
  // token (a span, which has no key of its own); a toolbar's buttons are real buttons, which press themselves.
  // - The text strip (viz/text_view.py): a 128-token run would be 128 Tab stops; the stop starts on the selected
  //   step's first token, and pressing a token shows its step.
  // - Each chart's Plotly toolbar: its ten buttons (download PNG, zoom, pan, box and lasso select, zoom in / out,
  //   autoscale, reset axes, Plotly's link) would be ten Tab stops, so Tab from Play to the page's next control
  //   would pass eighteen. Each toolbar keeps every button, for a mouse and the keyboard alike (teachers download
  //   PNGs, zoom and reset; removing buttons would take one from someone), and is one Tab stop, on its first
  //   button (Download plot as a PNG), named as a toolbar so a screen reader says the arrows move in it.
  const GROUPS = [
    {box: '.gen-text', item: '.tok', start: (box) => box.querySelector('.tok.current')},
    {box: '.js-plotly-plot .modebar', item: '.modebar-btn', role: 'toolbar', name: 'Chart tools'},
  ];
  const rove = () => {
    const at = document.activeElement;
    for (const g of GROUPS) {
      for (const box of document.querySelectorAll(g.box)) {
        const items = [...box.querySelectorAll(g.item)];
        if (!items.length) continue;
        if (g.name && box.getAttribute('aria-label') !== g.name) {
          box.setAttribute('role', g.role);
          box.setAttribute('aria-label', g.name);
        }
        const stop = (items.includes(at) && at) || items.find((it) => it.getAttribute('tabindex') === '0')
          || g.start?.(box) || items[0];
        for (const it of items) {
          const want = it === stop ? '0' : '-1';
          if (it.getAttribute('tabindex') !== want) it.setAttribute('tabindex', want);
        }
      }
    }
  };
  // Captured, so that it runs before the step keys above, which leave alone a key it took (defaultPrevented).
  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const g = GROUPS.find((x) => e.target.matches?.(`${x.box} ${x.item}`));
    // A token a press focused hands ← / → and Space to the steps (above) and keeps Enter; a toolbar button a
    // press focused keeps its arrows (the step keys leave a focused button alone).
    if (!g || (e.target === pointed && g.item === '.tok' && e.key !== 'Enter')) return;
    const items = [...e.target.closest(g.box).querySelectorAll(g.item)];
    const i = items.indexOf(e.target);
    const to = {ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: items.length - 1}[e.key];
    if (to !== undefined) {
      items[Math.max(0, Math.min(items.length - 1, to))].focus();
      rove();
    } else if ((e.key === 'Enter' || e.key === ' ') && e.target.matches('[role="button"]:not(button)')) {
      e.target.click();
    } else return;
    e.preventDefault();
  }, true);
  document.addEventListener('focusin', rove);
  // A text strip that scrolls (the app's presenter mode) keeps the selected step's tokens in view.
  const keepCurrent = () => {
    const box = document.querySelector('#gen-text .gen-text');
    const cur = box && box.querySelector('.tok.current');
    if (!cur || box.scrollHeight <= box.clientHeight) return;
    const top = cur.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - 30) box.scrollTop = Math.max(0, top - 40);
  };
  // The strip's sentence on the selected step (viz/text_view.py step_summary, a visually hidden `p.sr-only`) is
  // drawn anew with each step, which a screen reader does not announce: a polite live region that stays in
  // #gen-text, outside what each step redraws, says each new sentence, and the drawn copy is hidden from
  // readers, so a reader browsing the page hears it once.
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
  // #gen-text is watched once it is on the page (the app's Gradio adds it after this runs; the export's is there
  // from the start). Gradio patches the strip in place (the sentence's text, its attributes, the selected step's
  // class), so those changes count too.
  const watchStrip = () => {
    const host = document.getElementById('gen-text');
    if (!host) return false;
    sayStep(host);
    new MutationObserver(() => { keepCurrent(); sayStep(host); }).observe(host, {childList: true, subtree: true,
      characterData: true, attributes: true, attributeFilter: ['aria-hidden', 'class']});
    return true;
  };
  if (!watchStrip()) {
    const find = new MutationObserver(() => { if (watchStrip()) find.disconnect(); });
    find.observe(document.body, {childList: true, subtree: true});
  }
  const tidy = () => { nameButtons(); rove(); };
  // The app patches the text strip in place (Gradio), resetting each token's tabindex to the server's, and the
  // export draws it anew with each step: watched too.
  new MutationObserver(tidy).observe(document.body, {childList: true, subtree: true, attributes: true,
    attributeFilter: ['tabindex']});
  tidy();
}
