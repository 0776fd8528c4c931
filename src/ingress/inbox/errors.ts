/** The claim was re-taken by another worker after its lease expired: this worker's result is void. */
export class DeliveryLeaseLostError extends Error {
  constructor(id: number) {
    super(`lost the lease on delivery ${id}: another worker took it over`);
    this.name = 'DeliveryLeaseLostError';
  }
}
