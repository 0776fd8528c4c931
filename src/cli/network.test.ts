import { describe, expect, it } from 'vitest';
import { isPrivateOrLoopbackUrl } from './network.js';

describe('addresses Gitea does not deliver to by default', () => {
  it.each([
    'http://localhost:3000',
    'http://baton.localhost',
    'http://127.0.0.1:3000',
    'http://10.1.2.3',
    'http://172.16.0.1',
    'http://172.31.255.255',
    'https://192.168.1.20',
    'http://169.254.1.1',
    'http://[::1]:3000',
    'http://[fd00::1]',
    'http://[fe80::1]',
  ])('%s is loopback or private', (url) => {
    expect(isPrivateOrLoopbackUrl(url)).toBe(true);
  });

  it.each(['https://baton.example.com', 'http://172.32.0.1', 'http://8.8.8.8', 'http://[2001:db8::1]', 'not a url'])('%s is not', (url) => {
    expect(isPrivateOrLoopbackUrl(url)).toBe(false);
  });
});
