export { createGiteaClient, type GiteaClientOptions } from './client.js';
export { normalizeLabelColor } from './map.js';
