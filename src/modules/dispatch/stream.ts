import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Offer } from './schemas.ts';
import type { DispatchService } from './service.ts';

/** Seconds between comment lines on an idle stream, so proxies and the courier app see it alive. */
const HEARTBEAT_MS = 15_000;

export interface OfferStreamOptions {
  dispatch: DispatchService;
  courierId: string;
  /** What an offer's `data:` line carries (the API sends the offer, the courier app its card). */
  data: (offer: Offer) => unknown;
  /** Asked at each heartbeat; false ends the stream (the courier app's session ended). */
  alive?: () => Promise<boolean>;
  /** The open streams of the caller, ended when the server starts closing (they never go idle). */
  streams: Set<() => void>;
}

/**
 * A courier's offers as server-sent events (GET /courier/offers/stream and the courier app's stream):
 * the open ones first, then each new one made on any instance (the dispatch service's subscribe), each
 * once, as an `offer` event with the offer id as its `id`; a comment line every HEARTBEAT_MS.
 */
export async function streamOffers(request: FastifyRequest, reply: FastifyReply, o: OfferStreamOptions): Promise<void> {
  const { dispatch, courierId } = o;
  const sent = new Set<string>();
  const raw = reply.raw;
  let closed = false;
  const send = (offer: Offer) => {
    if (closed || sent.has(offer.id) || offer.status !== 'open') return;
    sent.add(offer.id);
    raw.write(`event: offer\nid: ${offer.id}\ndata: ${JSON.stringify(o.data(offer))}\n\n`);
  };
  // Subscribe before listing, so an offer made in between is not missed (the set drops a duplicate).
  const unsubscribe = await dispatch.subscribe(courierId, (offerId) => {
    dispatch.getOffer(courierId, offerId).then(send, (err) => request.log.warn({ err, offerId }, 'offer for the stream could not be read'));
  });
  let open: Offer[];
  try {
    open = await dispatch.listOffers(courierId);
  } catch (err) {
    unsubscribe();
    throw err;
  }
  reply.hijack();
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  });
  raw.write('retry: 3000\n\n');
  for (const offer of open) send(offer);
  const end = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    unsubscribe();
    o.streams.delete(end);
    raw.end(); // the client reconnects (to another instance during a shutdown)
  };
  const heartbeat = setInterval(() => {
    if (!o.alive) return void raw.write(': keep-alive\n\n');
    o.alive().then(
      (alive) => (alive ? !closed && raw.write(': keep-alive\n\n') : end()),
      (err) => request.log.warn({ err }, 'the offers stream could not check its session'),
    );
  }, HEARTBEAT_MS);
  o.streams.add(end);
  request.raw.on('close', end);
  raw.on('close', end);
}
