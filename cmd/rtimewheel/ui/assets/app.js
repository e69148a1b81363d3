// rtimewheel dashboard: reads the /v1 API of the server that serves it and
// redraws every few seconds. No framework, no build step; charts by uPlot.
'use strict';

(() => {
  const REFRESH_MS = 5000;
  const TOKEN_KEY = 'rtw-api-token';
  const API = '../v1/'; // relative, so the dashboard works behind a path prefix

  const $ = (id) => document.getElementById(id);
  const views = ['overview', 'dead-letters', 'task'];
  const charts = {};
  let timer = null;
  let generation = 0; // bumped by route and showLogin: an older refresh loop stops
  let lookedUp = ''; // key shown in the task view

  class AuthError extends Error {}

  // api calls the server's API with the token of this tab, if any. A 401
  // asks for the token and rejects with AuthError.
  async function api(method, path) {
    const headers = { Accept: 'application/json' };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = 'Bearer ' + token;
    const res = await fetch(API + path, { method, headers, cache: 'no-store' });
    if (res.status === 401) {
      showLogin(token ? 'The server refused that token.' : '');
      throw new AuthError('unauthenticated');
    }
    if (res.status === 204) return null;
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      const err = new Error((body && body.error && body.error.message) || `HTTP ${res.status}`);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function showLogin(message) {
    generation++; // no polling behind the login form
    clearTimeout(timer);
    for (const v of views) $('view-' + v).hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    $('login-token').focus();
  }

  $('login').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('login-token').value.trim());
    $('login-token').value = '';
    $('login').hidden = true;
    route();
  });

  // Formatting.
  const two = (n) => String(n).padStart(2, '0');
  const hhmm = (d) => `${two(d.getHours())}:${two(d.getMinutes())}`;
  const when = (iso) => {
    if (!iso) return '';
    const d = new Date(iso);
    return `${d.toLocaleDateString()} ${hhmm(d)}:${two(d.getSeconds())}`;
  };
  const ago = (iso) => {
    const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
    return s < 90 ? `${s} s ago` : s < 5400 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`;
  };
  const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${n} ms`);

  function cell(text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function setStatus(text, isError) {
    $('status').textContent = text;
    $('status').classList.toggle('error', !!isError);
  }

  // Charts.
  function plotWidth(el) {
    return Math.max(260, el.clientWidth || el.parentElement.clientWidth - 12);
  }

  function drawChart(name, opts, data) {
    const el = $('chart-' + name);
    const chart = charts[name];
    if (chart) {
      chart.setData(data);
      return;
    }
    opts.width = plotWidth(el);
    opts.height = window.innerWidth < 600 ? 180 : 220;
    charts[name] = new uPlot(opts, data, el);
  }

  window.addEventListener('resize', () => {
    for (const [name, chart] of Object.entries(charts)) {
      chart.setSize({ width: plotWidth($('chart-' + name)), height: chart.height });
    }
  });

  const bars = uPlot.paths.bars({ size: [0.8, 40] });
  const minuteAxis = { values: (u, ticks) => ticks.map((t) => hhmm(new Date(t * 1000))) };

  function renderUpcoming(up) {
    const xs = up.minutes.map((m) => new Date(m.minute).getTime() / 1000);
    const ys = up.minutes.map((m) => m.due + m.leased);
    drawChart('upcoming', {
      legend: { show: true },
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
      axes: [minuteAxis, {}],
      series: [{ label: 'minute', value: (u, v) => (v == null ? '' : hhmm(new Date(v * 1000))) },
        { label: 'due', fill: 'rgba(37,99,235,.35)', stroke: '#2563eb', paths: bars, points: { show: false } }],
    }, [xs, ys]);
    $('card-upcoming').textContent = up.total;
    const tbody = $('table-upcoming').tBodies[0];
    tbody.replaceChildren();
    for (const m of up.minutes) {
      if (m.due + m.leased === 0) continue;
      const tr = document.createElement('tr');
      tr.dataset.minute = m.minute;
      tr.dataset.count = m.due + m.leased;
      tr.append(cell(hhmm(new Date(m.minute))), cell(m.due), cell(m.leased));
      tbody.append(tr);
    }
  }

  function renderRecent(recent) {
    const ms_ = recent.minutes;
    const xs = ms_.map((m) => new Date(m.minute).getTime() / 1000);
    const empty = (m, v) => (m.fired > 0 ? v : null);
    drawChart('outcomes', {
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
      axes: [minuteAxis, {}],
      series: [{ value: (u, v) => (v == null ? '' : hhmm(new Date(v * 1000))) },
        { label: 'delivered', stroke: '#16a34a', width: 2, fill: 'rgba(22,163,74,.12)', points: { show: false } },
        { label: 'retried', stroke: '#d97706', width: 2, points: { show: false } },
        { label: 'dead', stroke: '#dc2626', width: 2, points: { show: false } }],
    }, [xs, ms_.map((m) => m.delivered), ms_.map((m) => m.retried), ms_.map((m) => m.dead)]);
    drawChart('lateness', {
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(5, hi)] } },
      axes: [minuteAxis, { values: (u, ticks) => ticks.map((t) => `${t} ms`), size: 60 }],
      series: [{ value: (u, v) => (v == null ? '' : hhmm(new Date(v * 1000))) },
        { label: 'p50', stroke: '#2563eb', width: 2, spanGaps: true, points: { show: true, size: 5 }, value: (u, v) => (v == null ? '–' : `${v} ms`) },
        { label: 'p99', stroke: '#7c3aed', width: 2, spanGaps: true, points: { show: true, size: 5 }, value: (u, v) => (v == null ? '–' : `${v} ms`) }],
    }, [xs, ms_.map((m) => empty(m, m.lateness_p50_ms)), ms_.map((m) => empty(m, m.lateness_p99_ms))]);

    let delivered = 0, retried = 0, dead = 0, p99 = null, p50 = null;
    const tbody = $('table-recent').tBodies[0];
    tbody.replaceChildren();
    for (const m of ms_) {
      delivered += m.delivered; retried += m.retried; dead += m.dead;
      if (m.fired > 0) {
        p99 = Math.max(p99 || 0, m.lateness_p99_ms);
        p50 = Math.max(p50 || 0, m.lateness_p50_ms);
        const tr = document.createElement('tr');
        tr.dataset.minute = m.minute;
        tr.append(cell(hhmm(new Date(m.minute))), cell(m.delivered), cell(m.retried), cell(m.dead),
          cell(m.lateness_p50_ms), cell(m.lateness_p99_ms));
        tbody.prepend(tr);
      }
    }
    $('card-delivered').textContent = delivered;
    $('card-failed').textContent = retried + dead;
    $('card-failed-detail').textContent = `${retried} retried, ${dead} dead`;
    $('card-p99').textContent = p99 == null ? '–' : ms(p99);
    $('card-p50').textContent = p50 == null ? '' : `worst minute; p50 ${ms(p50)}`;
  }

  function renderWorkers(ws) {
    const tbody = $('workers').tBodies[0];
    tbody.replaceChildren();
    let inFlight = 0;
    for (const w of ws.workers) {
      inFlight += w.in_flight;
      const tr = document.createElement('tr');
      tr.append(cell(w.id), cell(w.host), cell(when(w.started_at)), cell(ago(w.last_seen_at)),
        cell(`${w.in_flight} / ${w.concurrency}`), cell(w.queued));
      tbody.append(tr);
    }
    if (ws.workers.length === 0) {
      const tr = document.createElement('tr');
      const td = cell('No worker has sent a heartbeat in the last 30 s: nothing fires.', 'error');
      td.colSpan = 6;
      tr.append(td);
      tbody.append(tr);
    }
    $('card-workers').textContent = ws.workers.length;
    $('card-inflight').textContent = `${inFlight} callbacks in flight`;
  }

  function renderDeadCount(n) {
    $('card-dead').textContent = n;
    $('nav-dead').textContent = n > 0 ? n : '';
  }

  async function refreshOverview() {
    const [up, recent, ws, dead] = await Promise.all([
      api('GET', 'stats/upcoming?minutes=60'), api('GET', 'stats/recent?minutes=60'),
      api('GET', 'stats/workers'), api('GET', 'stats/dead-letters')]);
    renderUpcoming(up);
    renderRecent(recent);
    renderWorkers(ws);
    renderDeadCount(dead.count);
  }

  // Dead letters.
  async function refreshDeadLetters() {
    const [list, dead] = await Promise.all([api('GET', 'dead-letters?limit=200'), api('GET', 'stats/dead-letters')]);
    renderDeadCount(dead.count);
    $('dead-total').textContent = dead.count > list.tasks.length ? `(newest ${list.tasks.length} of ${dead.count})` : `(${dead.count})`;
    const tbody = $('dead-letters').tBodies[0];
    tbody.replaceChildren();
    for (const t of list.tasks) {
      const tr = document.createElement('tr');
      tr.dataset.key = t.key;
      const keyCell = document.createElement('td');
      const link = document.createElement('a');
      link.href = '#task/' + encodeURIComponent(t.key);
      link.textContent = t.key;
      keyCell.append(link);
      const actions = cell('', 'actions');
      const retry = document.createElement('button');
      retry.textContent = 'Retry';
      retry.className = 'retry';
      retry.addEventListener('click', () => act(tr, retry, 'POST', `dead-letters/${encodeURIComponent(t.key)}/retry`, `Scheduled ${t.key} again.`));
      const del = document.createElement('button');
      del.textContent = 'Delete';
      del.className = 'danger delete';
      del.addEventListener('click', () => {
        if (confirm(`Delete the dead letter ${t.key}? It will not be retried.`)) {
          act(tr, del, 'DELETE', `dead-letters/${encodeURIComponent(t.key)}`, `Deleted ${t.key}.`);
        }
      });
      actions.append(retry, ' ', del);
      tr.append(keyCell, cell(`${t.method} ${t.callback_url}`, 'url'), cell(`${t.attempts} / ${t.max_attempts}`),
        cell(t.last_error || '', 'err'), cell(when(t.died_at)), actions);
      tbody.append(tr);
    }
    $('dead-empty').hidden = list.tasks.length > 0;
  }

  // act runs a Retry or Delete and takes the row away when it succeeded.
  async function act(tr, button, method, path, done) {
    button.disabled = true;
    try {
      await api(method, path);
      tr.remove();
      $('dead-notice').textContent = done;
      $('dead-empty').hidden = $('dead-letters').tBodies[0].rows.length > 0;
    } catch (err) {
      if (!(err instanceof AuthError)) $('dead-notice').textContent = `Failed: ${err.message}`;
      button.disabled = false;
    }
  }

  // Task lookup.
  $('lookup').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = $('lookup-key').value;
    if (location.hash !== '#task/' + encodeURIComponent(key)) {
      location.hash = '#task/' + encodeURIComponent(key); // route() looks it up
    } else {
      refresh();
    }
  });

  $('task-cancel').addEventListener('click', async () => {
    const key = lookedUp;
    if (!key || !confirm(`Cancel the task ${key}? Its callback will not fire.`)) return;
    try {
      await api('DELETE', 'tasks/' + encodeURIComponent(key));
      $('task-result').hidden = true;
      $('task-notice').textContent = `Cancelled ${key}: its callback will not fire.`;
      lookedUp = '';
    } catch (err) {
      if (!(err instanceof AuthError)) $('task-notice').textContent = `Failed: ${err.message}`;
    }
  });

  async function refreshTask() {
    if (!lookedUp) return;
    let t;
    try {
      t = await api('GET', 'tasks/' + encodeURIComponent(lookedUp));
    } catch (err) {
      if (err.status === 404) {
        $('task-result').hidden = true;
        $('task-notice').textContent = `No task with key ${lookedUp} is scheduled, retrying or dead.`;
        return;
      }
      throw err;
    }
    $('task-notice').textContent = '';
    const dl = $('task-fields');
    dl.replaceChildren();
    const row = (name, value, cls) => {
      if (value === undefined || value === null || value === '') return;
      const dt = document.createElement('dt');
      dt.textContent = name;
      const dd = document.createElement('dd');
      dd.textContent = value;
      if (cls) dd.className = cls;
      dl.append(dt, dd);
    };
    row('Key', t.key);
    row('State', t.state, 'state-' + t.state);
    row('Due', when(t.execute_at));
    row('Next attempt', t.state === 'retrying' ? when(t.next_attempt_at) : '');
    row('Attempts', `${t.attempts} of ${t.max_attempts}`);
    row('Callback', `${t.method} ${t.callback_url}`);
    row('Timeout', ms(t.timeout_ms));
    row('Last error', t.last_error);
    row('Died', when(t.died_at));
    $('task-cancel').textContent = t.state === 'dead' ? 'Delete dead letter' : 'Cancel task';
    $('task-result').hidden = false;
  }

  // Routing and the refresh loop.
  function currentView() {
    const hash = location.hash.replace(/^#/, '');
    const [view, ...rest] = hash.split('/');
    return { view: views.includes(view) ? view : 'overview', arg: rest.length ? decodeURIComponent(rest.join('/')) : '' };
  }

  async function refresh() {
    const { view } = currentView();
    try {
      if (view === 'overview') await refreshOverview();
      else if (view === 'dead-letters') await refreshDeadLetters();
      else await refreshTask();
      setStatus(`updated ${new Date().toLocaleTimeString()}`);
      document.body.dataset.loaded = view;
    } catch (err) {
      if (!(err instanceof AuthError)) setStatus(`cannot reach the server: ${err.message}`, true);
    }
  }

  function route() {
    const { view, arg } = currentView();
    if (!$('login').hidden) return;
    for (const v of views) $('view-' + v).hidden = v !== view;
    for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === view);
    if (view === 'task') {
      lookedUp = arg;
      $('lookup-key').value = arg;
      $('task-result').hidden = true;
      $('task-notice').textContent = '';
    }
    if (view === 'dead-letters') $('dead-notice').textContent = '';
    delete document.body.dataset.loaded;
    clearTimeout(timer);
    // The next refresh is scheduled when this one has finished, so a slow
    // server never has several of one tab's refreshes in flight.
    const gen = ++generation;
    const tick = async () => {
      if (!document.hidden) await refresh();
      if (gen === generation) timer = setTimeout(tick, REFRESH_MS);
    };
    tick();
  }

  window.addEventListener('hashchange', route);
  route();
})();
