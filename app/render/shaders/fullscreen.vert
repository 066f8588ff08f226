#version 330 core
// Full-screen pass, vertex stage: one triangle covering the viewport, made from gl_VertexID
// (no vertex buffer).

void main() {
    vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
