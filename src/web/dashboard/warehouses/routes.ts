import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.ts';
import { compileStrict } from '../../../lib/validation.ts';
import { type Warehouse, WarehouseInput } from '../../../modules/warehouses/schemas.ts';
import { field } from '../../forms.ts';
import { errorMessage, redirectWithFlash, render } from '../../render.ts';
import { merchantOf, requirePerson } from '../../session.ts';

/**
 * Warehouses (admins and employees): list, create, edit, disable/enable, through app.services.warehouses.
 * The form becomes the API's WarehouseInput and is checked against the same schema as POST /warehouse.
 */

export interface WarehouseForm {
  name: string;
  nameInt: string;
  address: string;
  city: string;
  lat: string;
  lng: string;
  contactPhone: string;
  contactEmail: string;
}

export interface WarehousesListView {
  title: string;
  warehouses: Warehouse[];
}

export interface WarehouseFormView {
  title: string;
  /** undefined: a new warehouse. */
  id?: string;
  status?: Warehouse['status'];
  form: WarehouseForm;
  /** Field name -> problem, shown next to the field. */
  fieldErrors: Record<string, string>;
  error?: string;
}

const validateInput = compileStrict<WarehouseInput>(WarehouseInput);

/** Which form field a schema path belongs to. */
const FIELD_OF: Record<string, keyof WarehouseForm> = {
  '/name': 'name',
  '/nameInt': 'nameInt',
  '/address': 'address',
  '/contactPhone': 'contactPhone',
  '/contactEmail': 'contactEmail',
  '/locationMetadata/display_name': 'address',
  '/locationMetadata/lat': 'lat',
  '/locationMetadata/lng': 'lng',
  '/locationMetadata/city': 'city',
};

const LABELS: Record<keyof WarehouseForm, string> = {
  name: 'Name',
  nameInt: 'Second name',
  address: 'Address',
  city: 'City',
  lat: 'Latitude',
  lng: 'Longitude',
  contactPhone: 'Contact phone',
  contactEmail: 'Contact e-mail',
};

function formOf(request: FastifyRequest): WarehouseForm {
  return {
    name: field(request, 'name', { max: 300 }),
    nameInt: field(request, 'nameInt', { max: 300 }),
    address: field(request, 'address', { max: 600 }),
    city: field(request, 'city', { max: 300 }),
    lat: field(request, 'lat', { max: 40 }),
    lng: field(request, 'lng', { max: 40 }),
    contactPhone: field(request, 'contactPhone', { max: 40 }),
    contactEmail: field(request, 'contactEmail', { max: 300 }),
  };
}

function formFromWarehouse(w: Warehouse): WarehouseForm {
  return {
    name: w.name,
    nameInt: w.nameInt ?? '',
    address: w.address,
    city: w.locationMetadata.city ?? '',
    lat: String(w.locationMetadata.lat),
    lng: String(w.locationMetadata.lng),
    contactPhone: w.contactPhone ?? '',
    contactEmail: w.contactEmail ?? '',
  };
}

/** The form as the API's input (keeping location details the form does not show), or the problems per field. */
function toInput(form: WarehouseForm, status: Warehouse['status'], previous?: Warehouse): { input: WarehouseInput } | { fieldErrors: Record<string, string> } {
  const fieldErrors: Record<string, string> = {};
  const number = (name: 'lat' | 'lng') => {
    if (!/^-?\d{1,3}(\.\d{1,12})?$/.test(form[name])) {
      fieldErrors[name] = `${LABELS[name]} must be a number such as ${name === 'lat' ? '55.7575' : '37.6136'}`;
      return 0;
    }
    return Number(form[name]);
  };
  const lat = number('lat');
  const lng = number('lng');
  const { city: _oldCity, ...keep } = previous?.locationMetadata ?? { display_name: '', lat: 0, lng: 0 };
  const input = {
    name: form.name,
    ...(form.nameInt ? { nameInt: form.nameInt } : {}),
    status,
    address: form.address,
    ...(form.contactPhone ? { contactPhone: form.contactPhone } : {}),
    ...(form.contactEmail ? { contactEmail: form.contactEmail } : {}),
    locationMetadata: { ...keep, display_name: form.address, lat, lng, ...(form.city ? { city: form.city } : {}) },
  };
  const checked = validateInput(input);
  if (!checked.ok) {
    for (const line of checked.errors) {
      const path = line.split(' ')[0];
      const name = FIELD_OF[path];
      if (name && !fieldErrors[name]) fieldErrors[name] = readable(name, line.slice(path.length + 1));
    }
    if (Object.keys(fieldErrors).length === 0) fieldErrors.name = 'Check the fields';
  }
  return Object.keys(fieldErrors).length > 0 ? { fieldErrors } : { input: input as WarehouseInput };
}

function readable(name: keyof WarehouseForm, problem: string): string {
  if (/must NOT have fewer than 1 characters|is required/.test(problem)) return `${LABELS[name]} is required`;
  if (/must NOT have more than (\d+)/.test(problem)) return `${LABELS[name]} is too long (at most ${/(\d+)/.exec(problem)?.[1]} characters)`;
  if (/must match pattern/.test(problem))
    return name === 'contactPhone' ? `${LABELS[name]} may have digits, +, spaces, dashes and parentheses` : `${LABELS[name]} must be one line of text`;
  if (/format "email"/.test(problem)) return `${LABELS[name]} is not an e-mail address`;
  if (/must be <=|must be >=/.test(problem)) return name === 'lat' ? 'Latitude must be from -90 to 90' : 'Longitude must be from -180 to 180';
  return `${LABELS[name]}: ${problem}`;
}

const EMPTY: WarehouseForm = { name: '', nameInt: '', address: '', city: '', lat: '', lng: '', contactPhone: '', contactEmail: '' };

export async function warehousesPages(app: FastifyInstance): Promise<void> {
  const warehouses = app.services.warehouses;
  app.addHook('preHandler', requirePerson('merchant', ['admin', 'employee']));

  /** The merchant's warehouse named in the URL; another merchant's id (or no uuid at all) is the same 404. */
  const own = async (request: FastifyRequest): Promise<Warehouse> => {
    const id = (request.params as { id: string }).id.toLowerCase();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) throw new AppError('WAREHOUSE_NOT_FOUND', `No warehouse ${id}`);
    return warehouses.get(merchantOf(request).merchantId, id);
  };

  const formPage = (reply: FastifyReply, view: Omit<WarehouseFormView, 'title'>, status = 200) =>
    render<WarehouseFormView>(
      reply,
      'dashboard/warehouses/form.eta',
      { title: view.id ? `Edit ${view.form.name || 'warehouse'}` : 'New warehouse', ...view },
      status,
    );

  app.get('/', async (request, reply) => {
    const { items } = await warehouses.list(merchantOf(request).merchantId, {});
    return render<WarehousesListView>(reply, 'dashboard/warehouses/list.eta', { title: 'Warehouses', warehouses: items });
  });

  app.get('/new', async (_request, reply) => formPage(reply, { form: EMPTY, fieldErrors: {} }));

  app.post('/', async (request, reply) => {
    const form = formOf(request);
    const r = toInput(form, 'ACTIVE');
    if ('fieldErrors' in r) return formPage(reply, { form, fieldErrors: r.fieldErrors, error: 'Check the marked fields.' }, 422);
    try {
      const w = await warehouses.create(merchantOf(request).merchantId, r.input);
      return redirectWithFlash(reply, '/dashboard/warehouses', `Warehouse "${w.name}" is created.`);
    } catch (err) {
      const message = errorMessage(err);
      if (!message) throw err;
      return formPage(reply, { form, fieldErrors: {}, error: `${message}.` }, (err as AppError).status);
    }
  });

  app.get('/:id', async (request, reply) => {
    const w = await own(request);
    return formPage(reply, { id: w.id, status: w.status, form: formFromWarehouse(w), fieldErrors: {} });
  });

  app.post('/:id', async (request, reply) => {
    const w = await own(request);
    const form = formOf(request);
    const r = toInput(form, w.status, w);
    if ('fieldErrors' in r) return formPage(reply, { id: w.id, status: w.status, form, fieldErrors: r.fieldErrors, error: 'Check the marked fields.' }, 422);
    const saved = await warehouses.replace(merchantOf(request).merchantId, w.id, r.input);
    return redirectWithFlash(reply, '/dashboard/warehouses', `Warehouse "${saved.name}" is saved.`);
  });

  for (const [action, status] of [
    ['disable', 'DISABLED'],
    ['enable', 'ACTIVE'],
  ] as const) {
    app.post(`/:id/${action}`, async (request, reply) => {
      const w = await own(request);
      const r = toInput(formFromWarehouse(w), status, w);
      if ('fieldErrors' in r) throw new AppError('VALIDATION_FAILED', 'This warehouse has details the service no longer accepts: edit it first');
      const saved = await warehouses.replace(merchantOf(request).merchantId, w.id, r.input);
      return redirectWithFlash(
        reply,
        '/dashboard/warehouses',
        status === 'DISABLED' ? `Warehouse "${saved.name}" is disabled: no new quotes from it.` : `Warehouse "${saved.name}" is active again.`,
      );
    });
  }
}
