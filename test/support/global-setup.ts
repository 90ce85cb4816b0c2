// Placeholder until the default repository builder lands in the same change.
export default async function setup(): Promise<void> {}
