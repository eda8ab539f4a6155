import SerializerSelector from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's own serializer factory (fast-json-stringify, as without this option), except that each
 * route's response serializer is compiled on the first response it sends instead of when the app starts
 * (Fastify asks for every route, status and content type at ready). A server holds the compiled code of
 * the answers it gives only: about 5 MiB less at idle (docs/benchmarks.md, memory). The first answer
 * of each kind pays the compilation once (tens of milliseconds for a route's first request, with its validators).
 */
export const lazySerializers: SerializerSelector.SerializerFactory = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serializer: SerializerSelector.Serializer | undefined;
    return (doc) => {
      serializer ??= compile(route);
      return serializer(doc);
    };
  };
};
