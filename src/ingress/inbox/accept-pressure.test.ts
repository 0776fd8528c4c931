import { describe, expect, it } from 'vitest';
import { createAcceptPressure } from './accept-pressure.js';

describe('createAcceptPressure', () => {
  it('is high only while deliveries arrive and the loop is busier than the threshold', () => {
    let clock = 10_000;
    let utilization = 0.9;
    const pressure = createAcceptPressure({ threshold: 0.5, arrivingMs: 500, utilization: () => utilization, clock: () => clock });
    // A busy loop with nothing arriving: the worker itself may fill it.
    expect(pressure.high()).toBe(false);
    pressure.noteInsert();
    expect(pressure.high()).toBe(true);
    // Once yielding, until the loop falls under half the threshold.
    utilization = 0.3;
    expect(pressure.high()).toBe(true);
    utilization = 0.25;
    expect(pressure.high()).toBe(false);
    utilization = 0.5;
    expect(pressure.high()).toBe(false);
    utilization = 0.9;
    clock += 500;
    expect(pressure.high()).toBe(true);
    clock += 1;
    expect(pressure.high()).toBe(false);
  });

  it('never yields with a threshold of 1', () => {
    const pressure = createAcceptPressure({ threshold: 1, utilization: () => 1, clock: () => 0 });
    pressure.noteInsert();
    expect(pressure.high()).toBe(false);
  });
});
