/**
 * GET /docs: Swagger UI over the service's own OpenAPI document (the one GET /openapi.json
 * serves), its scripts and styles served from the package: the page fetches nothing from
 * elsewhere (and validates nothing against swagger.io).
 */
import fastifySwagger, { type StaticDocumentSpec } from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { JsonSchema } from './schemas.js';

/** Registers the page; call it after the routes, whose document `openApi` builds. */
export function registerDocs(app: FastifyInstance, openApi: () => JsonSchema): void {
  // options as a function: evaluated when the plugin loads, once every route is in the document
  void app.register(fastifySwagger, () => ({
    mode: 'static' as const,
    specification: { document: openApi() as unknown as StaticDocumentSpec['document'] },
  }));
  void app.register(fastifySwaggerUi, { routePrefix: '/docs' });
}
