// A JSON-RPC 2.0 client over one WebSocket: one message per WebSocket
// message, requests with ids, notifications dispatched in arrival order.
//
// Ordering: a response resolves its promise while its message is handled,
// so the code awaiting it runs (as microtasks) before the next message is
// dispatched. A snapshot in a response therefore lands before the events
// that follow it on the wire.

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.data = data;
  }
}

export class Rpc {
  // url is the WebSocket URL; onNotification(method, params) receives the
  // server's notifications.
  constructor(url, onNotification) {
    this.onNotification = onNotification;
    this.nextId = 1;
    this.pending = new Map();
    this.ws = new WebSocket(url);
    this.opened = new Promise((resolve, reject) => {
      this.ws.addEventListener('open', () => resolve(), { once: true });
      this.ws.addEventListener('close', () => reject(new Error('connection failed')), { once: true });
    });
    // closed resolves when the connection ends, however it ends.
    this.closed = new Promise((resolve) => {
      this.ws.addEventListener('close', () => {
        for (const p of this.pending.values()) p.reject(new Error('connection lost'));
        this.pending.clear();
        resolve();
      }, { once: true });
    });
    this.opened.catch(() => {});
    this.ws.addEventListener('message', (e) => this.#receive(e.data));
  }

  call(method, params) {
    if (this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    const id = this.nextId++;
    const p = new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: params || {} }));
    return p;
  }

  close() {
    this.ws.close();
  }

  #receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      console.warn('sluice: a message that is not JSON was ignored');
      return;
    }
    if (msg.method !== undefined && msg.id === undefined) {
      this.onNotification(msg.method, msg.params || {});
      return;
    }
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.error) p.reject(new RpcError(msg.error.code, msg.error.message, msg.error.data));
    else p.resolve(msg.result);
  }
}
