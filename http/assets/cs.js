/* Vitrine's browser script: runs the page's `_pc(...)` commands, sends one request per
   page view (its events and the ids of its zones), fills the zones from the answer and
   reports clicks on their items. Served by the account's Vitrine at /<accessKey>/cs.js. */
(function (KEY, BASE, CONSENT_REQUIRED) {
  'use strict';
  var w = window, d = document;
  var NAME = w.PureClarityObject || '_pc';
  var API = BASE + 'api/clientside/' + encodeURIComponent(KEY);
  var VISITOR = 'pc_v_' + KEY, SESSION = 'pc_sessid_' + KEY;
  // The session cookie lasts five minutes after the shopper's last request (the
  // contract's limit), renewed by each answer.
  var SESSION_IDLE = 5 * 60 * 1000, YEAR = 365 * 24 * 3600, DEBOUNCE = 250;
  var consent = !CONSENT_REQUIRED, loaded = false, sent = false, tracked = false, timer = null;
  var events = [], callbacks = [], currency = null, zones = null;

  function readCookie(name) {
    var parts = d.cookie ? d.cookie.split('; ') : [];
    for (var i = 0; i < parts.length; i++) {
      var at = parts[i].indexOf('=');
      if (parts[i].slice(0, at) === name) {
        try { return decodeURIComponent(parts[i].slice(at + 1)); } catch (e) { return null; }
      }
    }
    return null;
  }
  function save(name, value, seconds) {
    if (!consent) return;
    d.cookie = name + '=' + encodeURIComponent(value) + '; path=/; max-age=' + seconds +
      '; SameSite=Lax' + (location.protocol === 'https:' ? '; Secure' : '');
    try { w.localStorage.setItem(name, value); } catch (e) { /* storage off */ }
  }
  function load(name) {
    if (!consent) return null;
    var value = readCookie(name);
    if (value === null) {
      try { value = w.localStorage.getItem(name); } catch (e) { value = null; }
    }
    return value;
  }
  function forget(name) {
    d.cookie = name + '=; path=/; max-age=0';
    try { w.localStorage.removeItem(name); } catch (e) { /* storage off */ }
  }
  function visitorId() { return load(VISITOR); }
  function sessionId() {
    var kept = load(SESSION), at = kept ? kept.lastIndexOf('|') : -1;
    if (at < 0 || Date.now() - Number(kept.slice(at + 1)) > SESSION_IDLE) return null;
    return kept.slice(0, at);
  }
  function keep(answer) {
    if (answer.visitorId) save(VISITOR, answer.visitorId, 2 * YEAR);
    if (answer.sessionId) save(SESSION, answer.sessionId + '|' + Date.now(), SESSION_IDLE / 1000);
  }

  /* The page's zone elements: `data-pureclarity="bmz:ID;id:P1;categoryid:C"` (either
     plugin) or `data-pureclarity-bmz-id="ID"`, with the page's product and category. */
  function findZones() {
    var found = [], byId = {}, page = {};
    var nodes = d.querySelectorAll('[data-pureclarity],[data-pureclarity-bmz-id]');
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i], pairs = {}, text = el.getAttribute('data-pureclarity') || '';
      var items = text.split(';');
      for (var j = 0; j < items.length; j++) {
        var at = items[j].indexOf(':');
        if (at > 0) pairs[items[j].slice(0, at).trim().toLowerCase()] = items[j].slice(at + 1).trim();
      }
      var id = pairs.bmz || el.getAttribute('data-pureclarity-bmz-id');
      if (!id) continue;
      if (!page.product && (pairs.id || pairs.sku)) page.product = pairs.id || pairs.sku;
      if (!page.category && pairs.categoryid) page.category = pairs.categoryid;
      if (!byId[id]) { byId[id] = []; found.push(id); }
      byId[id].push(el);
    }
    return { ids: found, elements: byId, page: page };
  }

  /* The page's context from its zones, on its page view when that lacks it. */
  function withContext(list, page) {
    for (var i = 0; i < list.length; i++) {
      if (list[i].name === 'page_view') {
        var data = list[i].data = list[i].data || {};
        if (page.product && data.product_id == null) data.product_id = page.product;
        if (page.category && data.category_id == null) data.category_id = page.category;
        return list;
      }
    }
    if (page.product) list.unshift({ name: 'page_view', data: { page_type: 'product_page', product_id: page.product } });
    else if (page.category) list.unshift({ name: 'page_view', data: { page_type: 'category_listing_page', category_id: page.category } });
    return list;
  }

  function post(body, then) {
    var request = new XMLHttpRequest();
    request.open('POST', API, true);
    request.setRequestHeader('Content-Type', 'application/json');
    request.onload = function () {
      var answer = null;
      try { answer = JSON.parse(request.responseText); } catch (e) { answer = null; }
      if (request.status === 200 && answer) return then(answer);
      failed();
      if (w.console && answer && answer.errors) w.console.warn('vitrine:', answer.errors.join('; '));
    };
    request.onerror = failed;
    request.send(JSON.stringify(body));
  }

  function send() {
    timer = null;
    var body = {}, first = !sent;
    if (currency) body.currency = currency;
    if (first) {
      zones = findZones();
      body.zones = zones.ids;
    }
    if (!consent) {
      // Before consent nothing leaves the page but what fills its zones: their ids,
      // the page's product and category, the currency. No event, no visitor or
      // session id, no address; the events wait for consent.
      if (!first) return;
      var page = {};
      if (zones.page.product) page.product_id = zones.page.product;
      if (zones.page.category) page.category_id = zones.page.category;
      body.page = page;
      body.tracking = false;
    } else {
      body.currentUrl = location.href;
      if (d.referrer) body.referer = d.referrer;
      body.events = events.splice(0, events.length);
      if (!tracked) body.events = withContext(body.events, zones.page);
      if (!first && !body.events.length) return;
      tracked = true;
      var visitor = visitorId(), session = sessionId();
      if (visitor) body.visitorId = visitor;
      if (session) body.sessionId = session;
    }
    sent = true;
    post(body, function (answer) {
      if (consent) keep(answer);
      if (first) fill(answer.zones || {}, answer.html || {});
    });
  }
  function schedule() {
    if (!loaded) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(send, sent ? DEBOUNCE : 0);
  }

  /* Each zone element says how it went (`data-vitrine-state`: filled, empty or failed),
     for the store's CSS; the fallback content stays where nothing was filled. */
  function mark(state) {
    if (!zones) return;
    for (var i = 0; i < zones.ids.length; i++) {
      var elements = zones.elements[zones.ids[i]];
      for (var j = 0; j < elements.length; j++) {
        if (!elements[j].getAttribute('data-vitrine-state')) elements[j].setAttribute('data-vitrine-state', state);
      }
    }
  }
  function failed() { mark('failed'); }

  function fill(answered, html) {
    for (var i = 0; i < zones.ids.length; i++) {
      var id = zones.ids[i], zone = answered[id];
      if (!zone || !html[id] || !(zone.items && zone.items.length)) continue;
      var elements = zones.elements[id];
      for (var j = 0; j < elements.length; j++) {
        var el = elements[j];
        el.innerHTML = html[id];
        if (el.style.display === 'none') el.style.display = '';
        el.setAttribute('data-vitrine-state', 'filled');
        el.addEventListener('click', clicked(id));
      }
    }
    mark('empty');
    if (w.performance && w.performance.mark) w.performance.mark('vitrine:zones-filled');
    for (var k = 0; k < callbacks.length; k++) {
      try { callbacks[k]('bmz'); } catch (e) { if (w.console) w.console.error(e); }
    }
  }
  function clicked(zone) {
    return function (event) {
      var item = event.target && event.target.closest ? event.target.closest('[data-pc-item]') : null;
      if (!item || !consent || !w.navigator.sendBeacon) return;
      var visitor = visitorId();
      if (!visitor) return;
      w.navigator.sendBeacon(API + '/click', JSON.stringify({
        visitorId: visitor, sessionId: sessionId(), zone: zone, product: item.getAttribute('data-pc-item')
      }));
    };
  }

  function command(args) {
    var name = args[0], data = args[1];
    switch (name) {
      case 'currency': currency = data == null ? null : String(data); return;
      case 'page_view': case 'product_view': case 'order': case 'customer_details':
        events.push({ name: name, data: data || {} }); break;
      case 'set_basket': events.push({ name: name, data: data || [] }); break;
      case 'customer_logout':
        // The shopper left: this browser starts again as a new, anonymous visitor.
        forget(VISITOR); forget(SESSION); break;
      case 'callback_event': if (typeof data === 'function') callbacks.push(data); return;
      case 'consent':
        consent = data === true;
        if (!consent) { forget(VISITOR); forget(SESSION); return; }
        break;
      default: return;
    }
    schedule();
  }

  // A theme that includes the loader twice runs the script twice: the second finds
  // the first's command function and leaves the page to it (one request, the queue
  // read once).
  if (w[NAME] && w[NAME].vitrine) return;
  var queued = (w[NAME] && w[NAME].q) || [];
  w[NAME] = function () { command(arguments); };
  w[NAME].vitrine = true;
  for (var i = 0; i < queued.length; i++) command(queued[i]);
  function start() { loaded = true; schedule(); }
  if (d.readyState === 'loading') d.addEventListener('DOMContentLoaded', start);
  else start();
})(__VITRINE_ARGS__);
