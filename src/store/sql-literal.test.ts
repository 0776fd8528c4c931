import { describe, expect, it } from 'vitest';
import { sqlLiteral } from './sql-literal.js';

describe('sqlLiteral', () => {
  it('writes whole numbers, quoted text and NULL', () => {
    expect(sqlLiteral(1_764_571_200_000)).toBe('1764571200000');
    expect(sqlLiteral(-3)).toBe('-3');
    expect(sqlLiteral('0b9e5c1e-6f0a-4d5e-9a43-6c1f2d3e4f50')).toBe("'0b9e5c1e-6f0a-4d5e-9a43-6c1f2d3e4f50'");
    expect(sqlLiteral(null)).toBe('NULL');
  });

  it("doubles quotes, so text cannot end the literal: it'); DROP TABLE runs; --", () => {
    expect(sqlLiteral("it'); DROP TABLE runs; --")).toBe("'it''); DROP TABLE runs; --'");
  });

  it('refuses what it cannot write exactly', () => {
    expect(() => sqlLiteral(1.5)).toThrow('sqlLiteral takes whole numbers only, got 1.5');
    expect(() => sqlLiteral(Number.NaN)).toThrow('whole numbers only');
    expect(() => sqlLiteral(2 ** 60)).toThrow('whole numbers only');
    expect(() => sqlLiteral('a\0b')).toThrow('NUL');
    expect(() => sqlLiteral('a\\b')).toThrow('backslash');
  });
});
