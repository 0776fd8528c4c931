export {
  createFakeCoder,
  type FakeCoder,
  type FakeCoderOptions,
  type RecordedRequest,
  type SeedWorkspace,
  type WorkspaceSnapshot,
} from './server.js';
export { convertWorkspaceStatus } from './model.js';
