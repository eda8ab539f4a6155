import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { refusalMessage, STATE_LABELS, type TimeView, timeView } from '../../dashboard/format.ts';
import { baseUrlOf, field } from '../../forms.ts';
import { redirectWithFlash, render } from '../../render.ts';
import { requirePerson } from '../../session.ts';
import { actorOf, CAN, may } from '../operator.ts';

/**
 * Couriers: every courier, who is online, their current jobs; create (the client secret and the courier
 * app's one-time activation link shown once),
 * disable, enable, each with a reason. Map: online couriers and open jobs drawn to scale in SVG (as the
 * tracking page draws), refreshing itself every few seconds (ops.js re-fetches the drawing).
 */

export interface OpsCouriersView {
  title: string;
  rows: Array<{
    id: string;
    name: string;
    phone: string;
    status: string;
    online: boolean;
    seen: TimeView | null;
    jobs: Array<{ href: string; state: string }>;
  }>;
  canAct: boolean;
  created: { name: string; clientId: string; clientSecret: string; activationUrl: string } | null;
  error: string | null;
}

export interface OpsMapView {
  title: string;
  refreshSeconds: number;
  couriers: Array<{ x: number; y: number; name: string; jobs: number }>;
  jobs: Array<{ x: number; y: number; href: string }>;
  label: string;
  updated: TimeView;
}

const REFRESH_SECONDS = 10;

/** Projects points into the drawing's 0..100 box (10 of margin, room for the names), keeping the map's aspect (longitude scaled by latitude). */
export function project(points: Array<{ lat: number; lng: number }>): (p: { lat: number; lng: number }) => { x: number; y: number } {
  if (points.length === 0) return () => ({ x: 50, y: 50 });
  const lats = points.map((p) => p.lat);
  const lngs = points.map((p) => p.lng);
  const midLat = (Math.min(...lats) + Math.max(...lats)) / 2;
  const scale = Math.cos((midLat * Math.PI) / 180);
  const minX = Math.min(...lngs) * scale;
  const maxY = Math.max(...lats);
  const span = Math.max((Math.max(...lngs) - Math.min(...lngs)) * scale, maxY - Math.min(...lats), 0.005);
  const round = (v: number) => Math.round(v * 10) / 10;
  return (p) => ({ x: round(10 + ((p.lng * scale - minX) / span) * 80), y: round(10 + ((maxY - p.lat) / span) * 80) });
}

export async function opsCouriersPages(app: FastifyInstance): Promise<void> {
  const s = app.services;
  const read = { preHandler: requirePerson('operator', CAN.read) };
  const act = { preHandler: requirePerson('operator', CAN.support) };

  async function couriersPage(request: FastifyRequest, reply: FastifyReply, o: { created?: OpsCouriersView['created']; error?: string; status?: number } = {}) {
    const fleet = await s.couriers.fleet();
    return render<OpsCouriersView>(
      reply,
      'ops/couriers/couriers.eta',
      {
        title: 'Couriers',
        rows: fleet.couriers
          .sort((a, b) => Number(b.online) - Number(a.online) || a.name.localeCompare(b.name))
          .map((c) => ({
            id: c.id,
            name: c.name,
            phone: c.phone,
            status: c.status,
            online: c.online,
            seen: c.position ? timeView(c.position.at) : null,
            jobs: c.jobs.map((j) => ({ href: `/ops/transfers/${j.transferId}`, state: STATE_LABELS[j.state] })),
          })),
        canAct: may(request, CAN.support),
        created: o.created ?? null,
        error: o.error ?? null,
      },
      o.status ?? 200,
    );
  }

  app.get('/couriers', read, async (request, reply) => couriersPage(request, reply));

  app.post('/couriers', act, async (request, reply) => {
    try {
      const phone = field(request, 'phone', { max: 60 });
      // Checked first (as mds couriers create does), so a refused phone leaves no courier behind.
      if (!(await s.accounts.courierPhoneFree(phone))) throw new AppError('PHONE_TAKEN', `Another courier already logs in with ${phone.trim()}`);
      const c = await s.couriers.create(field(request, 'name', { max: 200 }), phone, actorOf(request));
      const activation = await s.accounts.courierActivationLink(c.courier.id, baseUrlOf(request, app.webConfig.publicBaseUrl));
      return couriersPage(request, reply, {
        created: { name: c.courier.name, clientId: c.clientId, clientSecret: c.clientSecret, activationUrl: activation.url },
      });
    } catch (err) {
      return couriersPage(request, reply, { error: refusalMessage(err), status: 422 });
    }
  });

  for (const [path, status, done] of [
    ['disable', 'DISABLED', 'disabled: its tokens stop working; its jobs stay as they are'],
    ['enable', 'ACTIVE', 'enabled again'],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/couriers/:id/${path}`, act, async (request, reply) => {
      try {
        const c = await s.couriers.setStatus(request.params.id, status, actorOf(request), field(request, 'reason', { max: 600 }));
        return redirectWithFlash(reply, '/ops/couriers', `${c.name} is ${done}.`);
      } catch (err) {
        return couriersPage(request, reply, { error: refusalMessage(err), status: 422 });
      }
    });
  }

  app.get('/map', read, async (_request, reply) => {
    const fleet = await s.couriers.fleet();
    const online = fleet.couriers.filter((c) => c.online && c.position);
    const at = project([...online.map((c) => c.position!), ...fleet.openJobs.map((j) => j.pickup)]);
    return render<OpsMapView>(reply, 'ops/couriers/map.eta', {
      title: 'Map',
      refreshSeconds: REFRESH_SECONDS,
      couriers: online.map((c) => ({ ...at(c.position!), name: c.name.split(' ')[0], jobs: c.jobs.length })),
      jobs: fleet.openJobs.map((j) => ({ ...at(j.pickup), href: `/ops/transfers/${j.transferId}` })),
      label: `${online.length} courier(s) online and ${fleet.openJobs.length} job(s) waiting for a courier`,
      updated: timeView(new Date().toISOString()),
    });
  });
}
