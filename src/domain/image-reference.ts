/**
 * What "pinned" means for a container image, for the configuration and for the broker's
 * spec rules alike: a reference that cannot move under us, unlike a tag.
 */

/** An image id, with or without its `sha256:` prefix (the engine takes both). */
const IMAGE_ID = /^(?:sha256:)?[0-9a-f]{64}$/;

// Docker's reference grammar (distribution/reference): [host[:port]/]path[:tag]@sha256:<hex>.
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST_REFERENCE = new RegExp(`^${NAME}(?::${TAG})?@sha256:[0-9a-f]{64}$`);

/** `sha256:<64 hex>` or the bare 64 hex digits. */
export function isImageId(image: string): boolean {
  return IMAGE_ID.test(image);
}

/** `name@sha256:<64 hex>`, with an optional registry, port and tag before the digest. */
export function isDigestReference(image: string): boolean {
  return DIGEST_REFERENCE.test(image);
}

/** An image id or a digest reference: what may run without being on an allowlist. */
export function isPinnedImage(image: string): boolean {
  return isImageId(image) || isDigestReference(image);
}
