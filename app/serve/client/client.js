// Orrery's client for a served run: pictures decoded into a canvas, the viewer's controls,
// keyboard, mouse and touch. One module for the page `orrery serve` sends (a WebSocket) and for
// the Jupyter widget (the widget's comm): each brings a transport with the same four calls.
// The messages are those of docs/serve-protocol.md.

const PROTOCOL_VERSION = 1;
const HEADER_BYTES = 24;
const KEY_PICTURE = 1, DELTA_PICTURE = 2, JPEG_PICTURE = 3;
const MAX_SIDE = 4096;
const RECONNECT_MS = [250, 500, 1000, 2000, 4000];

// A transport: connect(handlers) with handlers.open(), .message(data: string | ArrayBuffer),
// .close(reason); send(object); close(). The WebSocket one reconnects by itself.
export function websocketTransport(url) {
  let socket = null, handlers = null, attempt = 0, stopped = false;
  function open() {
    socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => { attempt = 0; handlers.open(); };
    socket.onmessage = (event) => handlers.message(event.data);
    socket.onclose = (event) => {
      handlers.close(event.reason || "the connection to the server was lost");
      if (!stopped) setTimeout(open, RECONNECT_MS[Math.min(attempt++, RECONNECT_MS.length - 1)]);
    };
  }
  return {
    connect(given) { handlers = given; open(); },
    send(message) { if (socket && socket.readyState === 1) socket.send(JSON.stringify(message)); },
    close() { stopped = true; if (socket) socket.close(); },
  };
}

// The Jupyter widget's comm (anywidget's model): pictures arrive as buffers beside a message.
export function commTransport(model) {
  let handlers = null;
  const listener = (content, buffers) => {
    if (content && content.picture && buffers && buffers.length) {
      const view = buffers[0];
      handlers.message(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength));
    } else {
      handlers.message(JSON.stringify(content));
    }
  };
  return {
    connect(given) { handlers = given; model.on("msg:custom", listener); handlers.open(); },
    send(message) { model.send(message); },
    close() { model.off("msg:custom", listener); },
  };
}

function element(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function supportedCodecs() {
  const codecs = [];
  if (typeof VideoDecoder !== "undefined") {
    try {
      const probe = await VideoDecoder.isConfigSupported({ codec: "avc1.42C01F" });
      if (probe.supported) codecs.push("h264");
    } catch (error) { /* no H.264 decoder: pictures come as JPEG */ }
  }
  codecs.push("jpeg");
  return codecs;
}

function format(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  if (typeof value !== "number") return String(value);
  if (value !== 0 && (Math.abs(value) < 1e-3 || Math.abs(value) >= 1e5)) return value.toExponential(2);
  return value.toFixed(digits);
}

export function mount(root, transport, { width = null, height = null } = {}) {
  root.classList.add("orrery-root");
  if (width) root.style.width = `${width}px`;
  if (height) root.style.height = `${height}px`;
  const canvas = element("canvas", { class: "orrery-canvas", tabindex: "0" });
  const status = element("div", { class: "orrery-status", text: "connecting…" });
  const panel = element("div", { class: "orrery-panel" });
  // Decoded H.264 pictures go to a <video> through a MediaStreamTrackGenerator where the browser
  // has one (Chromium): the compositor then converts each picture once, where a canvas's
  // drawImage converts it, copies it into the canvas and the canvas into the compositor (headless
  // Chromium without a GPU: 7.6 against 10.0 ms of CPU a 720p picture, ADR 0336). The video lets
  // input through to the canvas under it; JPEG pictures, and every picture where there is no
  // generator, are drawn into the canvas.
  const video = typeof MediaStreamTrackGenerator === "undefined" ? null
    : element("video", { class: "orrery-video", muted: "", autoplay: "", playsinline: "" });
  root.replaceChildren(...(video ? [canvas, video] : [canvas]), panel, status);
  let pictureWriter = null;  // the generator's writer while the video shows the pictures
  if (video) {
    const generator = new MediaStreamTrackGenerator({ kind: "video" });
    pictureWriter = generator.writable.getWriter();
    video.muted = true;
    video.srcObject = new MediaStream([generator]);
    video.play().catch((error) => {
      pictureWriter = null;  // a page that may not play video: the canvas shows the pictures
      video.hidden = true;
      fail(`pictures drawn into the canvas: the video could not play (${error.message})`);
    });
  }
  // Opaque and desynchronized: a picture covers the whole canvas, so nothing under it is blended
  // and it reaches the screen without waiting for the page's next composited frame. Made with
  // the canvas's first picture: until then the canvas is transparent over the video's.
  let drawContext = null;
  function drawPicture(image) {
    if (!drawContext) drawContext = canvas.getContext("2d", { alpha: false, desynchronized: true });
    drawContext.drawImage(image, 0, 0, canvas.width, canvas.height);
  }

  // What tests and `orrery bench serve`'s browser client read.
  const state = {
    connected: false, decoded: 0, keyPictures: 0, codec: null, step: null, sequence: 0,
    errors: [], lastError: null, stats: {}, settings: {}, view: {}, inputSent: 0,
    inputLatencies: [], frameLatencies: [], pictureBytes: 0, panelVisible: true,
  };
  let decoder = null, codec = null, inputSent = new Map(), pendingKey = true;
  let lastFrameMade = null;
  let controls = [], helloSent = false;

  // --- transport ----------------------------------------------------------------------
  function send(message) {
    if (message.type === "camera" || message.type === "control") {
      state.inputSent += 1;
      message.input = state.inputSent;
      inputSent.set(state.inputSent, performance.now());
    }
    transport.send(message);
  }

  function pictureSize() {
    const ratio = Math.min(window.devicePixelRatio || 1, 2);
    const box = canvas.getBoundingClientRect();
    const side = (value) => Math.max(16, Math.min(MAX_SIDE, Math.round(value * ratio)));
    return [side(box.width || 640), side(box.height || 360)];
  }

  async function hello() {
    const [w, h] = pictureSize();
    canvas.width = w; canvas.height = h;
    send({ type: "hello", version: PROTOCOL_VERSION, codecs: await supportedCodecs(), width: w, height: h });
    helloSent = true;
  }

  transport.connect({
    open() { state.connected = true; status.textContent = ""; status.hidden = true; resetDecoder(); hello(); },
    close(reason) {
      state.connected = false; helloSent = false;
      status.hidden = false;
      status.textContent = `Disconnected: ${reason}. Reconnecting…`;
    },
    message(data) {
      if (typeof data === "string") text(JSON.parse(data));
      else picture(data);
    },
  });

  // --- pictures -----------------------------------------------------------------------
  function resetDecoder() {
    if (decoder && decoder.state !== "closed") decoder.close();
    decoder = null; codec = null; pendingKey = true;
  }

  // A picture on the canvas: the step it shows is the page's step from now on.
  function shown(sequence, inputShown, made, step, bytes) {
    state.decoded += 1;
    state.step = step;
    state.sequence = sequence;
    state.pictureBytes += bytes;
    const now = performance.now();
    // A frame's latency: taken by the server -> the first picture of it shown; the pictures
    // that show it again (the camera turned meanwhile) carry the same time and are not counted.
    if (made !== lastFrameMade) state.frameLatencies.push(Date.now() - made);
    lastFrameMade = made;
    for (const [input, sent] of inputSent) {
      if (input > inputShown) break;
      state.inputLatencies.push(now - sent);
      inputSent.delete(input);
    }
    if (state.frameLatencies.length > 1000) state.frameLatencies.splice(0, 500);
    if (state.inputLatencies.length > 1000) state.inputLatencies.splice(0, 500);
    transport.send({ type: "ack", sequence });
  }

  function picture(buffer) {
    const header = new DataView(buffer, 0, HEADER_BYTES);
    const kind = header.getUint8(0);
    const sequence = header.getUint32(4, true);
    const made = header.getFloat64(8, true);
    const inputShown = header.getUint32(16, true);
    const step = header.getUint32(20, true);
    const payload = new Uint8Array(buffer, HEADER_BYTES);
    if (kind === JPEG_PICTURE) {
      if (video) video.hidden = true;
      createImageBitmap(new Blob([payload], { type: "image/jpeg" })).then((bitmap) => {
        drawPicture(bitmap);
        bitmap.close();
        shown(sequence, inputShown, made, step, payload.byteLength);
      }).catch((error) => fail(`a JPEG picture could not be decoded: ${error}`));
      return;
    }
    if (kind === KEY_PICTURE) state.keyPictures += 1;
    if (!decoder || (pendingKey && kind !== KEY_PICTURE)) {
      if (kind !== KEY_PICTURE) { transport.send({ type: "ack", sequence }); return; }
      configure();
    }
    pendingKey = false;
    const pending = { sequence, inputShown, made, step, bytes: payload.byteLength };
    decodeQueue.set(sequence, pending);
    decoder.decode(new EncodedVideoChunk({
      type: kind === KEY_PICTURE ? "key" : "delta", timestamp: sequence, data: payload,
    }));
  }

  const decodeQueue = new Map();
  function configure() {
    if (decoder && decoder.state !== "closed") decoder.close();
    decoder = new VideoDecoder({
      output(frame) {
        const pending = decodeQueue.get(frame.timestamp);
        if (pending) decodeQueue.delete(pending.sequence);
        const show = () => {
          if (pending) shown(pending.sequence, pending.inputShown, pending.made, pending.step, pending.bytes);
        };
        if (pictureWriter) {  // the writer takes the frame and closes it
          pictureWriter.write(frame).then(show, (error) => {
            fail(`a picture could not be shown: ${error}`);
            if (pending) transport.send({ type: "ack", sequence: pending.sequence });
          });
          return;
        }
        drawPicture(frame);
        frame.close();
        show();
      },
      error(error) {
        fail(`the video decoder failed (${error.message}); asking for a key picture`);
        for (const pending of decodeQueue.values()) transport.send({ type: "ack", sequence: pending.sequence });
        decodeQueue.clear();
        decoder = null; pendingKey = true;
        transport.send({ type: "keyframe" });
      },
    });
    decoder.configure({ codec: codec || "avc1.42C01F", optimizeForLatency: true });
  }

  function fail(message) {
    state.errors.push(message);
    state.lastError = message;
    messageLine.textContent = message;
  }

  // --- messages -----------------------------------------------------------------------
  function text(message) {
    switch (message.type) {
      case "welcome":
        controls = message.controls;
        state.settings = message.settings;
        state.view = message.view;
        buildPanel(message);
        break;
      case "stream":
        state.codec = message.codec;
        if (pictureWriter) video.hidden = false;
        if (message.codec !== codec) { codec = message.codec; if (decoder) configure(); }
        break;
      case "settings":
        state.settings = message;
        refreshSettings();
        break;
      case "view":
        state.view = message;
        break;
      case "stats":
        state.stats = message;
        refreshStats();
        break;
      case "error":
        fail(message.message);
        break;
    }
  }

  // --- the panel ----------------------------------------------------------------------
  const fields = {};
  const statLines = {};
  const messageLine = element("div", { class: "orrery-message" });
  const energyPlot = element("canvas", { class: "orrery-energy", width: "280", height: "80" });

  function control(name, value) { send({ type: "control", name, value }); }

  function numberField(label, name, { step = "any", min = null, placeholder = "" } = {}) {
    const input = element("input", { type: "number", step, placeholder, "data-control": name });
    if (min !== null) input.min = min;
    input.addEventListener("change", () => {
      if (input.value !== "") control(name, Number(input.value));
    });
    fields[name] = input;
    return element("label", {}, [element("span", { text: label }), input]);
  }

  function selectField(label, name, options, onChange = null) {
    const select = element("select", { "data-control": name });
    for (const option of options) select.append(element("option", { value: option, text: option }));
    select.addEventListener("change", () => (onChange || ((value) => control(name, value)))(select.value));
    fields[name] = select;
    return element("label", {}, [element("span", { text: label }), select]);
  }

  function slider(label, name, min, max, value, scale = (x) => x) {
    const input = element("input", { type: "range", min, max, step: "any", value, "data-control": name });
    const shownValue = element("output", { text: format(scale(Number(value)), 2) });
    input.refresh = () => { shownValue.textContent = format(scale(Number(input.value)), 2); };
    input.addEventListener("input", () => {
      input.refresh();
      control(name, scale(Number(input.value)));
    });
    fields[name] = input;
    return element("label", { class: "orrery-slider" }, [element("span", { text: label }), input, shownValue]);
  }

  function button(label, name, onClick) {
    const node = element("button", { type: "button", "data-control": name, text: label, onclick: onClick });
    fields[`button:${name}`] = node;
    return node;
  }

  function section(title, children, open = true) {
    const details = element("details", {}, [element("summary", { text: title }), ...children]);
    details.open = open;
    return details;
  }

  function buildPanel(welcome) {
    const settings = welcome.settings;
    const sections = [];
    // only what this server takes (a run over MPI takes pause and step, say)
    const offered = (name, make) => (controls.includes(name) ? [make()] : []);
    if (settings.kind === "live") {
      sections.push(section("Run", [
        element("div", { class: "orrery-buttons" }, [
          button(settings.paused ? "Resume" : "Pause", "pause", () => control("pause", !state.settings.paused)),
          button("Step", "step", () => control("step", 1)),
          ...offered("restart", () => button("Restart", "restart", () => control("restart", null))),
        ]),
        ...offered("scenario", () => selectField("scenario", "scenario", settings.scenarios)),
        ...offered("n", () => numberField("particles", "n", { step: "1", min: 1 })),
        ...offered("solver", () => selectField("solver", "solver", settings.solvers)),
        ...offered("dt", () => numberField("dt", "dt", { min: 0 })),
        ...offered("theta", () => numberField("θ", "theta", { min: 0, placeholder: "solver's choice" })),
        ...offered("softening", () => numberField("softening", "softening", { min: 0 })),
        ...(welcome.recordings && controls.includes("record") ? [element("div", { class: "orrery-buttons" }, [
          button("Record", "record", () => control("record", !(state.stats.recording))),
          numberField("every K steps", "record_every", { step: "1", min: 1 }),
        ])] : []),
      ]));
    } else if (settings.kind === "replay") {
      const seek = element("input", { type: "range", min: 0, max: Math.max(settings.frames - 1, 0), step: 1, value: 0, "data-control": "seek" });
      seek.addEventListener("change", () => control("seek", Number(seek.value)));
      fields.seek = seek;
      sections.push(section("Replay", [
        element("div", { class: "orrery-buttons" }, [
          button("Play", "pause", () => control("pause", state.settings.playing)),
          button("◀", "back", () => control("step", -1)),
          button("▶", "forward", () => control("step", 1)),
        ]),
        element("label", { class: "orrery-slider" }, [element("span", { text: "frame" }), seek]),
        numberField("speed (frames/s)", "speed"),
      ]));
    }
    const view = welcome.view_options;
    sections.push(section("View", [
      slider("exposure", "exposure", -3, 3, 0, (x) => 0.6 * Math.pow(2, x)),
      slider("point size", "point_size", 0.5, 12, 3),
      selectField("colour", "colour", view.colour),
      selectField("render", "render", view.render),
      selectField("colour map", "colour_map", view.colour_map),
      button("Reset camera", "reset-camera", () => send({ type: "camera", action: "reset" })),
    ]));
    const names = ["fps", "steps/s", "live/solver", "energy error", "step", "particles", "solver",
                   "drawn", "frame path", "encode", "bitrate", "viewers"];
    const lines = names.map((name) => {
      statLines[name] = element("span", { class: "orrery-value" });
      return element("div", { class: "orrery-stat" }, [element("span", { text: name }), statLines[name]]);
    });
    sections.push(section("Statistics", [...lines, energyPlot]));
    const hide = element("button", { type: "button", class: "orrery-hide", text: "Hide panel (H)", onclick: togglePanel });
    panel.replaceChildren(hide, messageLine, ...sections);
    refreshSettings();
  }

  function togglePanel() {
    state.panelVisible = !state.panelVisible;
    panel.classList.toggle("orrery-collapsed", !state.panelVisible);
  }

  function setField(name, value) {
    const field = fields[name];
    if (!field || document.activeElement === field || value === null || value === undefined) return;
    field.value = value;
    if (field.refresh) field.refresh();
  }

  function refreshSettings() {
    const settings = state.settings;
    for (const name of ["colour", "render", "colour_map"]) setField(name, state.view[name]);
    if (fields.point_size) setField("point_size", state.view.point_size);
    if (fields.exposure && state.view.exposure) setField("exposure", Math.log2(state.view.exposure / 0.6));
    if (settings.kind === "live") {
      for (const name of ["scenario", "n", "solver", "dt", "theta", "softening"]) setField(name, settings[name]);
      if (fields["button:pause"]) fields["button:pause"].textContent = settings.paused ? "Resume" : "Pause";
    } else if (settings.kind === "replay") {
      setField("speed", settings.speed);
      if (fields["button:pause"]) fields["button:pause"].textContent = settings.playing ? "Pause" : "Play";
    }
  }

  function refreshStats() {
    const stats = state.stats;
    const ratio = stats.solver_seconds_per_step > 0 && stats.steps_per_second > 0
      ? stats.steps_per_second * stats.solver_seconds_per_step : null;
    const values = {
      "fps": format(stats.fps, 1), "steps/s": format(stats.steps_per_second, 1),
      "live/solver": ratio === null ? "–" : `${(100 * ratio).toFixed(1)} %`,
      "energy error": format(stats.energy_error), "step": format(stats.step, 0),
      "particles": stats.n === undefined ? "–" : stats.n.toLocaleString("en"),
      "solver": stats.solver || "–", "frame path": stats.frame_path || "–",
      "drawn": stats.drawn ? `${stats.drawn[0].toLocaleString("en")} of ${stats.drawn[1].toLocaleString("en")}` : "–",
      "encode": stats.encode_ms === null || stats.encode_ms === undefined ? "–" : `${stats.encode_ms.toFixed(1)} ms`,
      "bitrate": `${format(stats.bitrate_mbit, 1)} Mbit/s`, "viewers": format(stats.viewers, 0),
    };
    for (const [name, value] of Object.entries(values)) if (statLines[name]) statLines[name].textContent = value;
    if (statLines.solver) statLines.solver.title = stats.solver || "";
    if (fields["button:record"]) fields["button:record"].textContent = stats.recording ? "Stop recording" : "Record";
    if (stats.error) messageLine.textContent = stats.error.split("\n").filter(Boolean).slice(-1)[0];
    else if (stats.recording_error) messageLine.textContent = stats.recording_error;
    if (state.settings.kind === "live" && fields["button:pause"]) fields["button:pause"].textContent = stats.paused ? "Resume" : "Pause";
    if (state.settings.kind === "live") state.settings.paused = stats.paused;
    plotEnergy(stats.energy);
  }

  function plotEnergy(energy) {
    const plot = energyPlot.getContext("2d");
    plot.clearRect(0, 0, energyPlot.width, energyPlot.height);
    if (!energy || energy[0].length < 2) return;
    const [times, errors] = energy;
    const t0 = times[0], t1 = times[times.length - 1] || 1;
    const top = Math.max(...errors.map(Math.abs), 1e-12);
    plot.strokeStyle = "#f4a259";
    plot.beginPath();
    times.forEach((time, index) => {
      const x = ((time - t0) / Math.max(t1 - t0, 1e-12)) * energyPlot.width;
      const y = energyPlot.height / 2 - (errors[index] / top) * (energyPlot.height / 2 - 2);
      index ? plot.lineTo(x, y) : plot.moveTo(x, y);
    });
    plot.stroke();
    plot.fillStyle = "#aaa";
    plot.fillText(`±${top.toExponential(1)}`, 4, 10);
  }

  // --- input --------------------------------------------------------------------------
  let drag = null;
  canvas.addEventListener("contextmenu", (event) => event.preventDefault());
  canvas.addEventListener("pointerdown", (event) => {
    canvas.focus();
    canvas.setPointerCapture(event.pointerId);
    drag = { x: event.clientX, y: event.clientY, pan: event.button === 2 || event.shiftKey };
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag || event.pointerType === "touch") return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (!dx && !dy) return;
    drag.x = event.clientX; drag.y = event.clientY;
    // as the desktop viewer: y grows upwards; orbit by CSS pixels, pan by picture pixels
    const ratio = drag.pan ? canvas.width / Math.max(canvas.getBoundingClientRect().width, 1) : 1;
    send({ type: "camera", action: drag.pan ? "pan" : "orbit", dx: dx * ratio, dy: -dy * ratio });
  });
  canvas.addEventListener("pointerup", () => { drag = null; });
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    send({ type: "camera", action: "zoom", steps: Math.max(-10, Math.min(10, -event.deltaY / 100)) });
  }, { passive: false });

  // touch: one finger orbits, two pinch to zoom and drag to pan
  let touches = new Map(), pinch = null;
  canvas.addEventListener("touchstart", (event) => {
    event.preventDefault();
    for (const touch of event.changedTouches) touches.set(touch.identifier, [touch.clientX, touch.clientY]);
    pinch = null;
  }, { passive: false });
  canvas.addEventListener("touchmove", (event) => {
    event.preventDefault();
    const moved = [...event.changedTouches].map((touch) => [touch.identifier, touch.clientX, touch.clientY]);
    if (touches.size === 1 && moved.length === 1) {
      const [id, x, y] = moved[0];
      const [px, py] = touches.get(id) || [x, y];
      send({ type: "camera", action: "orbit", dx: x - px, dy: py - y });
    }
    for (const [id, x, y] of moved) touches.set(id, [x, y]);
    if (touches.size === 2) {
      const [[ax, ay], [bx, by]] = [...touches.values()];
      const distance = Math.hypot(ax - bx, ay - by), centre = [(ax + bx) / 2, (ay + by) / 2];
      if (pinch) {
        send({ type: "camera", action: "zoom", steps: Math.log(distance / pinch.distance) / Math.log(1 / 0.9) });
        send({ type: "camera", action: "pan", dx: centre[0] - pinch.centre[0], dy: pinch.centre[1] - centre[1] });
      }
      pinch = { distance, centre };
    }
  }, { passive: false });
  canvas.addEventListener("touchend", (event) => {
    for (const touch of event.changedTouches) touches.delete(touch.identifier);
    pinch = null;
  });

  canvas.addEventListener("keydown", (event) => {
    if (event.target !== canvas) return;
    const key = event.key;
    if (key === " ") {
      event.preventDefault();
      if (state.settings.kind === "live") control("pause", !state.settings.paused);
      else if (state.settings.kind === "replay") control("pause", state.settings.playing);
    } else if (key === ".") control("step", 1);
    else if (key === "r" || key === "R") send({ type: "camera", action: "reset" });
    else if (key === "h" || key === "H") togglePanel();
    else if (key === "f" || key === "F") {
      if (document.fullscreenElement) document.exitFullscreen(); else root.requestFullscreen();
    }
  });

  let resizeTimer = null;
  new ResizeObserver(() => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      if (!helloSent) return;
      const [w, h] = pictureSize();
      if (w === canvas.width && h === canvas.height) return;
      canvas.width = w; canvas.height = h;
      transport.send({ type: "resize", width: w, height: h });
    }, 150);
  }).observe(canvas);

  state.send = send;
  state.close = () => transport.close();
  return state;
}

// The Jupyter widget (anywidget): the same client over the widget's comm.
export default {
  render({ model, el }) {
    const state = mount(el, commTransport(model), { width: model.get("width"), height: model.get("height") });
    el.orrery = state;
    return () => state.close();
  },
};
