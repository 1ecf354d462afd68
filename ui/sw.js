// Signoff's service worker: Web Push notifications (README, Web Push). A push of a waiting
// batch shows a notification with Approve (when its person may approve) and Reject; a push that
// says the batch was decided, canceled or expired closes it, on every device. An action never
// decides from the notification alone: it is the server's decision, POST
// /api/push/approvals/{taskId}?batch=ID with its person's session, which the server checks at
// click time against the batch that waits then (the one the notification showed, or nothing:
// a batch decided elsewhere is answered with who decided it).
"use strict";

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// A bearer token of --auth tokens, handed over by the page at enrolment (a worker cannot read
// the page's localStorage), kept in the worker's own cache storage.
const KEPT = "signoff-push";
const TOKEN = "/push-token";

self.addEventListener("message", (event) => {
  const token = event.data && event.data.token;
  if (typeof token === "string") {
    event.waitUntil(caches.open(KEPT).then((cache) => cache.put(TOKEN, new Response(token))));
  }
});

async function headers(extra) {
  const all = Object.assign({}, extra);
  const kept = await caches.open(KEPT).then((cache) => cache.match(TOKEN));
  if (kept) all.Authorization = "Bearer " + (await kept.text());
  return all;
}

self.addEventListener("push", (event) => {
  let message;
  try {
    message = event.data.json();
  } catch (_) {
    return;
  }
  event.waitUntil(receive(message));
});

async function receive(message) {
  const open = await self.registration.getNotifications({ tag: message.tag });
  if (message.type === "close") {
    open.forEach((shown) => shown.close());
    return;
  }
  const actions = [];
  if (message.approve) actions.push({ action: "approve", title: "Approve" });
  actions.push({ action: "reject", title: "Reject" });
  await self.registration.showNotification(message.title, {
    body: message.body,
    tag: message.tag,
    data: message,
    actions,
    requireInteraction: true,
  });
}

self.addEventListener("notificationclick", (event) => {
  const shown = event.notification;
  const message = shown.data || {};
  shown.close();
  if (event.action === "approve" || event.action === "reject") {
    event.waitUntil(decide(message, event.action));
  } else {
    event.waitUntil(self.clients.openWindow(message.url || "/"));
  }
});

// Tells the person how an action went, in a notification of the batch's tag, without actions.
function tell(message, text) {
  return self.registration.showNotification(message.title || "Signoff", {
    body: text,
    tag: message.tag,
    data: { url: message.url },
  });
}

async function decide(message, action) {
  const body =
    action === "approve"
      ? { decision_type: "approve" }
      : { decision_type: "deny", reason: "Rejected from a notification" };
  const url =
    "/api/push/approvals/" +
    encodeURIComponent(message.task_id) +
    "?batch=" +
    encodeURIComponent(message.batch_id);
  let answer;
  try {
    answer = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: await headers({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    });
  } catch (_) {
    return tell(message, "Signoff could not be reached: nothing was decided.");
  }
  if (answer.ok) {
    const quorum = await answer.json().then((j) => j.quorum, () => null);
    if (quorum) return tell(message, "Your approval is counted; the batch waits for more.");
    return tell(message, action === "approve" ? "Approved." : "Rejected.");
  }
  const why = await answer.json().then((j) => j.error, () => "");
  return tell(message, why || "Nothing was decided: HTTP " + answer.status);
}
